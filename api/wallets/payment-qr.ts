// A payment-request URI as a QR code (ISO/IEC 18004, through the `qrcode` package): a PNG, as a data
// URL an <img> shows as it is, and the same symbol as SVG. Error correction M (about 15 % of the symbol
// may be lost) and the standard four-module quiet zone, which phone cameras need.
import QRCode from 'qrcode';

export interface PaymentQr {
  /** `data:image/png;base64,...` */
  png: string;
  svg: string;
}

/** PNG width in pixels: enough for a screen, small enough to answer inline (a few kilobytes). */
export const QR_PNG_WIDTH = 320;

export async function paymentQr(uri: string): Promise<PaymentQr> {
  const options = { errorCorrectionLevel: 'M' as const, margin: 4 };
  const [png, svg] = await Promise.all([QRCode.toDataURL(uri, { ...options, type: 'image/png', width: QR_PNG_WIDTH }), QRCode.toString(uri, { ...options, type: 'svg' })]);
  return { png, svg };
}
