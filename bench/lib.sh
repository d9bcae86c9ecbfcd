# Shared helpers of the benchmark sections (sourced, not run). bench/run.sh
# exports the environment they rely on:
#   tmp      a scratch directory of this section (removed afterwards)
#   tessera  the tessera launcher, built from this tree
#   REPS     repetitions of each measurement
#   SUMMARY  a file: append rows of the report's summary table to it,
#            "| Benchmark | Tessera | Baseline | Ratio | Target | Status |"
# A section prints its part of the report (markdown, from a "## " heading)
# on stdout and its progress on stderr.

say() { printf '%s\n' "$*" >&2; }

# field NAME KEY < results: the values of KEY on the RESULT lines of NAME
# ("RESULT name=NAME key=value ...").
field() { awk -v n="name=$1" -v k="$2=" '$1=="RESULT" && $2==n { for (i=3; i<=NF; i++) if (index($i, k)==1) print substr($i, length(k)+1) }'; }
# median < numbers
median() { sort -g | awk '{ a[NR]=$1 } END { if (NR==0) exit 1; if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
# ratios A B: line-by-line A/B of two files of numbers.
ratios() { paste "$1" "$2" | awk '{ printf "%.4f\n", $1/$2 }'; }
# fmt VALUE PRINTF-FORMAT
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { printf f, v }'; }
# meets VALUE OP TARGET, OP one of <= >=: "**met**" or "**not met**".
meets() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { ok = (op=="<=") ? v<=t : v>=t; print ok ? "**met**" : "**not met**" }'; }
# list FILE FORMAT: the numbers in FILE, formatted, comma-separated.
list() { awk -v f="$2" '{ printf "%s" f, (NR>1 ? ", " : ""), $1 }' "$1"; }

# apt_ensure CMD PACKAGE...: succeeds when CMD exists, installing the
# Debian packages first when it does not and the script runs as root;
# otherwise prints why not on stdout and fails.
apt_ensure() {
	local cmd=$1
	shift
	command -v "$cmd" >/dev/null 2>&1 && return 0
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "$cmd is not installed, and the script is not root (or has no apt-get) to install $*"
		return 1
	fi
	say "installing $* (apt-get install -y)"
	local inst="DEBIAN_FRONTEND=noninteractive apt-get install -y -q $*"
	if ! bash -c "$inst" >>"$tmp/apt.log" 2>&1 && ! { apt-get update -q >>"$tmp/apt.log" 2>&1 && bash -c "$inst" >>"$tmp/apt.log" 2>&1; }; then
		echo "apt-get install -y $* failed ($(tail -n 1 "$tmp/apt.log" | tr -d '|`'))"
		return 1
	fi
	command -v "$cmd" >/dev/null 2>&1 || { echo "$cmd still missing after installing $*"; return 1; }
}

# PY is Debian's python3, where python3-numpy installs (a python3 earlier on
# PATH may be another one without it).
PY=/usr/bin/python3

# numpy_missing: nothing when $PY can import numpy (installing python3-numpy
# first when the script runs as root); otherwise why not, on stdout.
numpy_missing() {
	"$PY" -c 'import numpy' 2>/dev/null && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		say "installing python3-numpy"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-numpy >>"$tmp/apt.log" 2>&1 ||
			{ apt-get update -q >>"$tmp/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-numpy >>"$tmp/apt.log" 2>&1; } || true
	fi
	"$PY" -c 'import numpy' 2>/dev/null || echo "NumPy is not installed for $PY and could not be installed (python3-numpy)"
}

# openblas_own_kernels: when the environment chooses OpenBLAS's kernels
# (OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE set, as on machines whose CPU an
# older OpenBLAS misjudges), unsets both for the rest of the section, so
# that NumPy, the baseline, runs the kernels OpenBLAS picks for this CPU
# (an older kernel chosen for it slows NumPy down), and the openblas build
# the same ones. Sets blas_kernels to a paragraph for the report that says
# so, empty when nothing was set. Results stay checked: the sections
# compare every program's checksum or losses.
openblas_own_kernels() {
	blas_kernels=""
	[ -n "${OPENBLAS_CORETYPE:-}${OPENBLAS_L2_SIZE:-}" ] || return 0
	local set="OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-}" chosen
	unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
	chosen=$(go run -tags openblas ./cmd/tessera info 2>/dev/null | sed -n 's/^blas *//p') || true
	blas_kernels="The environment of this run set $set; this section unset both, so NumPy and the openblas build alike ran the kernels OpenBLAS chooses for this CPU itself (${chosen:-OpenBLAS was not found for the openblas build}), with which NumPy runs faster."
}

# build_variants NAME PACKAGE: builds PACKAGE as $tmp/NAME (pure Go) and,
# when OpenBLAS is there, as $tmp/NAME-openblas (-tags openblas); sets the
# array builds to the variants built (pure [openblas]).
build_variants() {
	say "building $2"
	go build -o "$tmp/$1" "$2"
	builds=(pure)
	if go build -tags openblas -o "$tmp/$1-openblas" "$2" 2>"$tmp/openblas.log"; then
		builds+=(openblas)
	else
		say "no openblas build of $2: $(tail -n 1 "$tmp/openblas.log")"
	fi
}
