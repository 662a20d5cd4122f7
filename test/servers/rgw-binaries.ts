/** What Ceph RGW needs on the PATH (test/servers/rgw.sh), read by vitest.config.ts and the rgw tier's setup. */
import { existsSync } from 'node:fs';
import path from 'node:path';

export const RGW_BINARIES = [
  'ceph-mon',
  'ceph-osd',
  'radosgw',
  'radosgw-admin',
  'ceph-authtool',
  'monmaptool',
];

/** The RGW binaries not found on the PATH. */
export function missingRgwBinaries(): string[] {
  const dirs = (process.env.PATH ?? '').split(':');
  return RGW_BINARIES.filter((bin) => !dirs.some((dir) => existsSync(path.join(dir, bin))));
}

/** The Debian packages that bring them. */
export const RGW_INSTALL =
  'sudo apt-get install -y --no-install-recommends ceph-mon ceph-osd radosgw ceph-common';
