export declare const EXTERNAL: string[];
export declare const NODE_BUNDLE: {
  readonly bundle: true;
  readonly platform: 'node';
  readonly format: 'esm';
  readonly target: string;
  readonly external: string[];
  readonly banner: { js: string };
  readonly logLevel: 'silent';
};
export declare const MANIFEST: string;
export declare function lockHash(): string;
