// The fee schedules' collection (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { FeeScheduleRecord } from './fee-schedules.ts';

/** Index `<workspace> NUL <id>`: the workspace's schedules in creation order; the last is in force. Never changed or deleted. */
export const FEE_SCHEDULES = collection<FeeScheduleRecord>('fee_schedules');
