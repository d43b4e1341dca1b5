// Outgoing email of the platform (the Hosted Auth sign-in codes, docs/platform/hosted-auth.md): one
// `Mailer` interface, and an SMTP implementation over nodemailer configured by API_SMTP_URL and
// API_SMTP_FROM (read once at boot, api/config.ts). A message body may carry a one-time code: nothing
// here logs a message, a recipient or a body; a failure is reported by its category only.
import nodemailer, { type Transporter } from 'nodemailer';

export interface MailMessage {
  to: string;
  /** Display name of the sender; the address is the platform's configured one. */
  fromName: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}

export interface SmtpMailerOptions {
  /** smtp://user:pass@host:port or smtps://… (nodemailer's connection URL). */
  url: string;
  /** The envelope and From address, e.g. no-reply@auth.example.com. */
  from: string;
}

export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;
  constructor(private readonly o: SmtpMailerOptions) {
    // Bounded waits (a stalled relay must not hold sends forever); the URL's own settings win over these.
    this.transport = nodemailer.createTransport({ url: o.url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000, logger: false, debug: false });
  }

  async send(m: MailMessage): Promise<void> {
    await this.transport.sendMail({ from: { name: m.fromName, address: this.o.from }, to: m.to, subject: m.subject, text: m.text, html: m.html, disableFileAccess: true, disableUrlAccess: true });
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

/** A recipient as logs may show it: the first character and the domain (a***@example.com). */
export function maskEmail(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 1) return '***';
  return `${address[0]}***${address.slice(at)}`;
}
