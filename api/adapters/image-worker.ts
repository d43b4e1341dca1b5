// The worker thread that decodes and writes again uploaded images, one message at a time (image-reencode.ts
// `reencodeImageOffThread`), so seconds of pixel work never hold up the API's event loop.
import { parentPort } from 'node:worker_threads';
import { ImageDecodeError, reencodeImage, type ImageJob, type ImageJobReply } from './image-reencode.ts';

const port = parentPort;
if (!port) throw new Error('image-worker.ts runs as a worker thread');
port.on('message', async (job: ImageJob) => {
  let reply: ImageJobReply;
  try {
    const out = await reencodeImage(Buffer.from(job.bytes), job.contentType);
    reply = { ok: true, bytes: new Uint8Array(out.buffer, out.byteOffset, out.byteLength) };
  } catch (err) {
    reply = { ok: false, refused: err instanceof ImageDecodeError, message: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
