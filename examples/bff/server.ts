// Boots the sample BFF: settings from the environment, the browser package bundled, then listen.
// Run: see examples/bff/README.md.
import { loadSampleBffConfig } from './config.ts';
import { buildSampleBff } from './sample-bff.ts';
import { bundleBrowserPackage } from '../../deploy/sdk/build-browser.mjs';

const config = loadSampleBffConfig();
const { text } = await bundleBrowserPackage();
const app = await buildSampleBff({ ...config, ...(config.holderApiKey ? { holderApiKey: config.holderApiKey } : {}), browserBundle: text });
await app.listen({ host: config.host, port: config.port });
process.stdout.write(`sample BFF on ${config.origin} (listening on ${config.host}:${config.port}), API ${config.apiUrl}${config.storeKeyGenerated ? '; BFF_STORE_KEY not set: sessions end with this process' : ''}\n`);
