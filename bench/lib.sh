# Helpers of bench/run.sh (sourced): installing what the baselines need.
# Installing happens only as root with apt-get; otherwise a missing tool is
# named on stderr and the rows that need it are shown as missing.

say() { printf '%s\n' "$*" >&2; }

# apt_ensure CHECK PACKAGE...: runs CHECK (a command line); when it fails
# and the script is root with apt-get, installs the packages and runs CHECK
# again. Fails, saying why, when CHECK still fails.
apt_ensure() {
	local check=$1
	shift
	bash -c "$check" >/dev/null 2>&1 && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		say "installing $* (apt-get install -y)"
		local inst="DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $*"
		bash -c "$inst" >>"$work/apt.log" 2>&1 || { apt-get update -q >>"$work/apt.log" 2>&1 && bash -c "$inst" >>"$work/apt.log" 2>&1; } || true
	fi
	bash -c "$check" >/dev/null 2>&1 && return 0
	say "missing: $* ($check failed); the rows that need it will be missing"
	return 1
}

# build NAME PACKAGE: builds PACKAGE as $work/NAME and, when OpenBLAS is
# there, as $work/NAME-openblas (-tags openblas).
build() {
	go build -o "$work/$1" "$2"
	[ "$openblas" = 1 ] || return 0
	go build -tags openblas -o "$work/$1-openblas" "$2" 2>"$work/openblas.log" ||
		say "no openblas build of $2: $(tail -n 1 "$work/openblas.log")"
}
