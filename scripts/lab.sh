# Shared by examples/lab/demo.sh and scripts/bench-scale.sh (source it, do not run it): a temporary workspace, the
# provider built into it, the lab simulator started as a separate process (the path a real vCenter takes), a
# dev_overrides CLI config, the lab's call reports, and cleanup on every exit path. ~/.terraformrc is never read or
# written.
#
# Needs Go and a terraform binary: $TERRAFORM (absolute path, set by the Makefile), else `terraform` on PATH, else
# .cache/bin/terraform (built by `make terraform`).

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

export CHECKPOINT_DISABLE=1
export TF_INPUT=0

LAB_START_TIMEOUT="${LAB_START_TIMEOUT:-60}"

header() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
fail() { printf '\n\033[1;31m%s failed: %s\033[0m\n' "${LAB_SCRIPT:-script}" "$*" >&2; exit 1; }

# --- terraform ---------------------------------------------------------------------------------------------------
if [[ -z "${TERRAFORM:-}" ]]; then
  if command -v terraform >/dev/null 2>&1; then
    TERRAFORM="$(command -v terraform)"
  elif [[ -x "$repo_root/.cache/bin/terraform" ]]; then
    TERRAFORM="$repo_root/.cache/bin/terraform"
  else
    fail "no terraform found: run it through make (it builds one into .cache/bin), or set TERRAFORM=/abs/path"
  fi
fi
[[ -x "$TERRAFORM" ]] || fail "TERRAFORM=$TERRAFORM is not an executable file"
tf() { "$TERRAFORM" "$@"; }

# --- temporary workspace, cleaned up (and the lab stopped) on every exit path ------------------------------------
tmp="$(mktemp -d "${TMPDIR:-/tmp}/vspherehpc-lab.XXXXXX")"
lab_pid=""

stop_lab() {
  [[ -n "$lab_pid" ]] || return 0
  if kill -0 "$lab_pid" 2>/dev/null; then
    header "stopping the lab simulator (pid $lab_pid)"
    kill "$lab_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$lab_pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$lab_pid" 2>/dev/null; then
      echo "lab did not stop within 10 s; sending SIGKILL"
      kill -KILL "$lab_pid" 2>/dev/null || true
    fi
  fi
  wait "$lab_pid" 2>/dev/null || true
  lab_pid=""
}

cleanup() {
  local rc=$?
  set +e
  stop_lab
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

show_lab_log() {
  if [[ -s "$tmp/lab.log" ]]; then
    echo "---- lab simulator log (last 40 lines) ----" >&2
    tail -n 40 "$tmp/lab.log" >&2
    echo "-------------------------------------------" >&2
  fi
}

echo "terraform:  $TERRAFORM ($(tf version | head -n 1))"
echo "workspace:  $tmp"

# build_provider builds the provider into the workspace.
build_provider() {
  header "building the provider"
  mkdir -p "$tmp/providers"
  go build -ldflags "-X main.version=${VERSION:-demo}" -o "$tmp/providers/terraform-provider-vspherehpc" .
  echo "built $tmp/providers/terraform-provider-vspherehpc"
}

# start_lab ARGS... builds the lab command, starts it with ARGS on 127.0.0.1, waits for its env file, exports
# what it says (VSPHERE_*, the lab's names), and points Terraform at the built provider.
start_lab() {
  header "building and starting the lab simulator"
  go build -o "$tmp/vcsimlab" ./internal/cmd/vcsimlab
  # stdout repeats the env file (with the password): not kept; stderr is the lab log.
  "$tmp/vcsimlab" -listen 127.0.0.1:0 -env-file "$tmp/lab.env" "$@" >/dev/null 2>"$tmp/lab.log" </dev/null &
  lab_pid=$!
  echo "lab simulator pid $lab_pid ($*); waiting up to ${LAB_START_TIMEOUT}s for $tmp/lab.env"
  local deadline=$((SECONDS + LAB_START_TIMEOUT)) lab_rc
  until lab_env_ready; do
    if ! kill -0 "$lab_pid" 2>/dev/null; then
      show_lab_log
      wait "$lab_pid" 2>/dev/null && lab_rc=0 || lab_rc=$?
      lab_pid=""
      fail "the lab simulator exited (status $lab_rc) before writing $tmp/lab.env"
    fi
    if ((SECONDS >= deadline)); then
      show_lab_log
      fail "the lab simulator did not write a complete $tmp/lab.env within ${LAB_START_TIMEOUT}s"
    fi
    sleep 0.5
  done
  set -a
  # shellcheck disable=SC1091
  source "$tmp/lab.env"
  set +a
  echo "lab is up: vCenter https://${VSPHERE_SERVER} (user ${VSPHERE_USER}, CA ${VSPHERE_CA_FILE})"
  echo "           datacenter ${VSPHERE_LAB_DATACENTER}, cluster ${VSPHERE_LAB_CLUSTER}"

  cat >"$tmp/dev.tfrc" <<EOF
provider_installation {
  dev_overrides {
    "vspherehpc/vspherehpc" = "$tmp/providers"
  }
  direct {}
}
EOF
  export TF_CLI_CONFIG_FILE="$tmp/dev.tfrc"
}

lab_env_ready() {
  [[ -s "$tmp/lab.env" ]] || return 1
  # The file is complete once it defines everything the scripts need.
  (
    set +u
    set -a
    # shellcheck disable=SC1091
    source "$tmp/lab.env" >/dev/null 2>&1 || exit 1
    for v in VSPHERE_SERVER VSPHERE_USER VSPHERE_PASSWORD VSPHERE_CA_FILE VSPHERE_LAB_DATACENTER VSPHERE_LAB_CLUSTER; do
      [[ -n "${!v:-}" ]] || exit 1
    done
  )
}

# lab_signal SIGNAL PATTERN sends SIGNAL to the lab and prints the first log line matching PATTERN that it wrote
# in answer.
lab_signal() {
  local before
  before=$(grep -c "$2" "$tmp/lab.log" || true)
  kill "-$1" "$lab_pid"
  for _ in $(seq 1 100); do
    [[ $(grep -c "$2" "$tmp/lab.log" || true) -gt $before ]] && break
    sleep 0.1
  done
  grep "$2" "$tmp/lab.log" | tail -n 1 | sed 's/^vcsimlab: [0-9/]* [0-9:]* //'
}

# wait_session_enders waits for the processes the provider leaves to log its sessions out once Terraform has
# stopped it (`-end-sessions`, bounded at 30 s), so that their Logout counts with the command that logged in.
wait_session_enders() {
  local ender
  ender="$(realpath "$tmp")/providers/terraform-provider-vspherehpc -end-sessions" # as os.Executable names it
  for _ in $(seq 1 350); do
    pgrep -f -x -- "$ender" >/dev/null || return 0
    sleep 0.1
  done
}

# lab_report prints the SOAP calls made since the previous report ("N SOAP calls: Login=1 ..."), then resets.
lab_report() {
  wait_session_enders
  lab_signal USR1 'SOAP calls: '
}
