#!/usr/bin/env bash
# dd_rate.sh DIR [MIB] — the disk's sequential rates under DIR, the
# baseline of the Zarr I/O benchmark (bench/zarrio), in Go's benchmark
# format:
#
#   BenchmarkDisk/dd_write 1 0.85 GB/s 1 cache-dropped
#   BenchmarkDisk/dd_read 1 1.20 GB/s 1 cache-dropped
#
# The write is `dd bs=8M conv=fdatasync` (timed until the data is on the
# disk, as bench/zarrio's write is until sync); before the read the page
# cache is dropped (/proc/sys/vm/drop_caches, as root; 0 cache-dropped
# otherwise, and the read rate is then the cache's).
set -euo pipefail
dir=${1:?usage: dd_rate.sh DIR [MIB]}
mib=${2:-1024}
file="$dir/dd-rate-$$"
trap 'rm -f "$file"' EXIT
cache=1
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || cache=0; }
# dd's last line: "N bytes (...) copied, S s, R MB/s"
rate() { awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") s = $(i-1); printf "%.6g", $1 / s / 1e9 }'; }
drop
w=$(dd if=/dev/zero of="$file" bs=8M count=$((mib / 8)) conv=fdatasync 2>&1 | rate)
drop
r=$(dd if="$file" of=/dev/null bs=8M 2>&1 | rate)
echo "BenchmarkDisk/dd_write 1 $w GB/s $cache cache-dropped"
echo "BenchmarkDisk/dd_read 1 $r GB/s $cache cache-dropped"
