export declare const EXTERNAL: string[];
export declare const BANNER: string;
export declare const MANIFEST: string;
export declare function lockHash(): string;
