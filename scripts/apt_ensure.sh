# Sourced by the scripts that need Debian packages:
#   source scripts/apt_ensure.sh; apt_ensure g++ cmake ...
# installs those of the named packages that are missing (one apt-get update,
# only when something is missing), with sudo when not root.
apt_ensure() {
  local missing=() p
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}
