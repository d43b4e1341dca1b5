// The account holders' collections (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { AccountHolderRecord, HistoryEntryRecord, MemberClaimRecord } from './account-holder-records.ts';
import type { ConsentRecord } from './account-holder-consents.ts';
import type { AvatarGrantRecord, AvatarRecord } from './account-holder-avatars.ts';
import type { ContactRecord } from './contacts.ts';
import type { HolderVaultRecord, VaultHolderRecord } from './holder-wallets.ts';

/** Indexes `<workspace> NUL all NUL <id>`, `<workspace> NUL email NUL <hash> NUL <id>`, `<workspace> NUL phone NUL <hash> NUL <id>`. */
export const ACCOUNT_HOLDERS = collection<AccountHolderRecord>('account_holders');
/** Index `<holder id> NUL <entry id>`: append-only. */
export const ACCOUNT_HOLDER_HISTORY = collection<HistoryEntryRecord>('account_holder_history');
/** `<workspace> NUL <member id>` → the holder linked to the member. */
export const ACCOUNT_HOLDER_MEMBERS = collection<MemberClaimRecord>('account_holder_members');
/** Index `<holder id> NUL <consent id>`: append-only acceptances. */
export const ACCOUNT_HOLDER_CONSENTS = collection<ConsentRecord>('account_holder_consents');
/** Holder id → its confirmed avatar. */
export const ACCOUNT_HOLDER_AVATARS = collection<AvatarRecord>('account_holder_avatars');
/** Object key → the holder an avatar upload URL was issued for; good for 15 minutes. */
export const ACCOUNT_HOLDER_AVATAR_GRANTS = collection<AvatarGrantRecord>('account_holder_avatar_grants');
/** Indexes `<workspace> NUL all NUL <id>`, `... holder NUL <holder id> NUL <id>`, `... email NUL <hash> NUL <id>`, `... phone NUL <hash> NUL <id>`. */
export const CONTACTS = collection<ContactRecord>('contacts');
/** Holder id → its linked hosted vault and the wallets derived for it (holder-wallets.ts). */
export const ACCOUNT_HOLDER_VAULTS = collection<HolderVaultRecord>('account_holder_vaults');
/** Vault id → the one holder it serves. */
export const VAULT_ACCOUNT_HOLDERS = collection<VaultHolderRecord>('vault_account_holders');
