// Types of build-browser.mjs for the TypeScript that imports it (the sample BFF, the tests).
export declare const BROWSER_ENTRY: string;
export interface BrowserBundleMetafile {
  inputs: Record<string, { bytes: number; imports: { path: string; kind: string; external?: boolean }[] }>;
  outputs: Record<string, { bytes: number; imports: { path: string; kind: string; external?: boolean }[]; exports: string[] }>;
}
export declare function bundleBrowserPackage(o?: { minify?: boolean }): Promise<{ text: string; metafile: BrowserBundleMetafile }>;
