/** Units of size and time, written once. */

export const KIB = 1024;
export const MIB = 1024 * KIB;
export const DAY_MS = 24 * 60 * 60 * 1000;
