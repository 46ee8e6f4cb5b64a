# Sourced by the scripts that install Debian packages.
# ensure_debian_packages WHO PKG...: installs those of PKG not installed yet (apt-get, as root or
# through sudo), saying "WHO: installing Debian packages: ..." or "WHO: Debian packages present".
ensure_debian_packages() {
  local who="$1" missing=() pkg sudo_cmd=""
  shift
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    printf '\033[1m%s:\033[0m Debian packages present\n' "$who"
    return 0
  fi
  printf '\033[1m%s:\033[0m installing Debian packages: %s\n' "$who" "${missing[*]}"
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
