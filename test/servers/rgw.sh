#!/usr/bin/env bash
# A throwaway single-node Ceph with the RADOS Gateway (a real S3 implementation) on 127.0.0.1.
#
#   test/servers/rgw.sh up   [DIR]   start mon + memstore OSD + radosgw, create an S3 user, print
#                                    RGW_ENDPOINT / RGW_ACCESS_KEY / RGW_SECRET_KEY (also in DIR/env)
#   test/servers/rgw.sh down [DIR]   stop exactly the daemons `up` started, remove DIR
#
# DIR defaults to $RGW_DIR or a new temp folder (printed as RGW_DIR). Needs the Debian packages
# ceph-mon ceph-osd radosgw ceph-common, and root (or a user allowed to run them); the settings
# below say why each is there. RGW_LC_DEBUG_INTERVAL (default 10) sets how many
# seconds a lifecycle "day" lasts; RGW_LC_THREADS=true lets the gateway run lifecycle by itself;
# RGW_LC_MAX_OBJS (default 32, Ceph's) sets the lifecycle index's shard count (1 puts every bucket
# with rules in one shard: test/deploy/rgw-lifecycle.test.ts must still pass so).
set -euo pipefail

cmd=${1:-}
dir=${2:-${RGW_DIR:-}}

fail() {
  echo "rgw.sh: $*" >&2
  for log in "$dir"/log/*.log; do
    [ -f "$log" ] || continue
    echo "----- last lines of $log -----" >&2
    tail -n 25 "$log" >&2
  done
  stop_daemons
  exit 1
}

stop_daemons() {
  [ -n "$dir" ] && [ -f "$dir/pids" ] || return 0
  while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$dir/pids"
  for _ in $(seq 1 50); do
    alive=0
    while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$dir/pids"
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$dir/pids"
  rm -f "$dir/pids"
}

free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

wait_for() { # description, seconds, command...
  local what=$1 seconds=$2
  shift 2
  for _ in $(seq 1 $((seconds * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  fail "$what did not come up within ${seconds}s"
}

case "$cmd" in
up)
  for bin in ceph-mon ceph-osd radosgw ceph ceph-authtool monmaptool radosgw-admin; do
    command -v "$bin" >/dev/null || { echo "rgw.sh: $bin not found (apt-get install ceph-mon ceph-osd radosgw ceph-common)" >&2; exit 2; }
  done
  [ -n "$dir" ] || dir=$(mktemp -d /tmp/rgw-XXXXXX)
  mkdir -p "$dir"/{mon,osd,run,log}
  : >"$dir/pids"
  fsid=$(cat /proc/sys/kernel/random/uuid)
  mon_port=$(free_port)
  rgw_port=$(free_port)
  conf="$dir/ceph.conf"
  cat >"$conf" <<CONF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$mon_port
mon initial members = a
public addr = 127.0.0.1
ms bind ipv6 = false
ms bind msgr2 = false
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
keyring = $dir/\$name.keyring
mon data = $dir/mon/\$name
osd data = $dir/osd/\$name
osd objectstore = memstore
memstore device bytes = 2147483648
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon data avail crit = 0
mon data avail warn = 0
paxos propose interval = 0.01
auth allow insecure global id reclaim = false
[client]
rgw lc debug interval = ${RGW_LC_DEBUG_INTERVAL:-10}
rgw enable lc threads = ${RGW_LC_THREADS:-false}
rgw lc max objs = ${RGW_LC_MAX_OBJS:-32}
[client.rgw.test]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
rgw dns name = 127.0.0.1
CONF
  {
    ceph-authtool --create-keyring "$dir/mon.keyring" --gen-key -n mon. --cap mon 'allow *'
    ceph-authtool --create-keyring "$dir/client.admin.keyring" --gen-key -n client.admin \
      --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *'
    ceph-authtool "$dir/mon.keyring" --import-keyring "$dir/client.admin.keyring"
    monmaptool --create --addv a "v1:127.0.0.1:$mon_port" --fsid "$fsid" "$dir/monmap"
    ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/mon.keyring"
  } >"$dir/log/setup.log" 2>&1 || fail "monitor set-up failed (see $dir/log/setup.log)"
  ceph-mon -c "$conf" -f -i a >>"$dir/log/daemons.out" 2>&1 &
  echo $! >>"$dir/pids"
  wait_for "the monitor" 30 timeout 5 ceph -c "$conf" mon stat

  osd_uuid=$(cat /proc/sys/kernel/random/uuid)
  osd_key=$(ceph-authtool --gen-print-key)
  echo "{\"cephx_secret\": \"$osd_key\"}" >"$dir/osd-secret.json"
  osd_id=$(ceph -c "$conf" osd new "$osd_uuid" -i "$dir/osd-secret.json" 2>>"$dir/log/setup.log") || fail "ceph osd new failed"
  mkdir -p "$dir/osd/osd.$osd_id"
  {
    ceph-authtool --create-keyring "$dir/osd.$osd_id.keyring" --name "osd.$osd_id" --add-key "$osd_key"
    ceph-osd -c "$conf" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid"
  } >>"$dir/log/setup.log" 2>&1 || fail "OSD set-up failed (see $dir/log/setup.log)"
  ceph-osd -c "$conf" -f -i "$osd_id" >>"$dir/log/daemons.out" 2>&1 &
  echo $! >>"$dir/pids"
  wait_for "the OSD" 30 sh -c "ceph -c '$conf' osd stat | grep -q '1 up'"

  ceph -c "$conf" auth get-or-create client.rgw.test mon 'allow rw' osd 'allow rwx' \
    -o "$dir/client.rgw.test.keyring" >>"$dir/log/setup.log" 2>&1 || fail "gateway key failed"
  radosgw -c "$conf" -f -n client.rgw.test >>"$dir/log/daemons.out" 2>&1 &
  rgw_pid=$!
  echo $rgw_pid >>"$dir/pids"
  wait_for "radosgw on port $rgw_port" 60 node -e \
    'require("http").get(process.argv[1], () => process.exit(0)).on("error", () => process.exit(1))' \
    "http://127.0.0.1:$rgw_port/"

  # Storage classes beyond STANDARD (for transitions and cold archives), each in its own pool. The
  # gateway made the default zone; it reads the new placement when restarted.
  for class in STANDARD_IA GLACIER_IR GLACIER DEEP_ARCHIVE; do
    pool="default.rgw.$(echo "$class" | tr 'A-Z' 'a-z').data"
    {
      radosgw-admin -c "$conf" -n client.admin zonegroup placement add --rgw-zonegroup default \
        --placement-id default-placement --storage-class "$class" &&
        radosgw-admin -c "$conf" -n client.admin zone placement add --rgw-zone default \
          --placement-id default-placement --storage-class "$class" --data-pool "$pool"
    } >>"$dir/log/setup.log" 2>&1 || fail "storage class $class could not be added"
  done
  kill "$rgw_pid"
  wait "$rgw_pid" 2>/dev/null || true
  grep -v "^$rgw_pid\$" "$dir/pids" >"$dir/pids.new" && mv "$dir/pids.new" "$dir/pids"
  radosgw -c "$conf" -f -n client.rgw.test >>"$dir/log/daemons.out" 2>&1 &
  echo $! >>"$dir/pids"
  wait_for "radosgw (restarted) on port $rgw_port" 60 node -e \
    'require("http").get(process.argv[1], () => process.exit(0)).on("error", () => process.exit(1))' \
    "http://127.0.0.1:$rgw_port/"

  access_key="rgwtest$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  secret_key=$(head -c 24 /dev/urandom | base64 | tr -d '/+=\n')
  radosgw-admin -c "$conf" -n client.admin user create --uid=test --display-name=test \
    --access-key="$access_key" --secret-key="$secret_key" >>"$dir/log/setup.log" 2>&1 || fail "S3 user creation failed"
  cat >"$dir/env" <<ENV
RGW_DIR=$dir
RGW_CONF=$conf
RGW_ENDPOINT=http://127.0.0.1:$rgw_port
RGW_ACCESS_KEY=$access_key
RGW_SECRET_KEY=$secret_key
ENV
  cat "$dir/env"
  ;;
down)
  [ -n "$dir" ] || { echo "usage: rgw.sh down DIR (or set RGW_DIR)" >&2; exit 2; }
  stop_daemons
  rm -rf "$dir"
  ;;
*)
  echo "usage: rgw.sh up|down [DIR]" >&2
  exit 2
  ;;
esac
