// The tenant and workspace a request acts in; every tenant-owned record is keyed by it.
export interface Scope { tenant: string; workspace: string }
