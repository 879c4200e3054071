#!/usr/bin/env bash
# `make demo`: build the provider, start the simulated vSphere lab on 127.0.0.1, apply examples/lab with a
# real Terraform through a dev_overrides CLI config, print the outputs, prove that a second plan is empty,
# and stop the lab. Everything happens in a temporary directory; ~/.terraformrc is never read or written.
#
# Needs Go and a terraform binary: $TERRAFORM (absolute path, set by the Makefile), else `terraform` on
# PATH, else .cache/bin/terraform (built by `make terraform`).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root"

export CHECKPOINT_DISABLE=1
export TF_INPUT=0

LAB_START_TIMEOUT="${LAB_START_TIMEOUT:-60}"

header() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
fail() { printf '\n\033[1;31mdemo failed: %s\033[0m\n' "$*" >&2; exit 1; }

# --- terraform ---------------------------------------------------------------------------------------------
if [[ -z "${TERRAFORM:-}" ]]; then
  if command -v terraform >/dev/null 2>&1; then
    TERRAFORM="$(command -v terraform)"
  elif [[ -x "$repo_root/.cache/bin/terraform" ]]; then
    TERRAFORM="$repo_root/.cache/bin/terraform"
  else
    fail "no terraform found: run 'make demo' (it builds one into .cache/bin), or set TERRAFORM=/abs/path"
  fi
fi
[[ -x "$TERRAFORM" ]] || fail "TERRAFORM=$TERRAFORM is not an executable file"
tf() { "$TERRAFORM" "$@"; }

# --- temporary workspace, cleaned up (and the lab stopped) on every exit path --------------------------------
tmp="$(mktemp -d "${TMPDIR:-/tmp}/vspherehpc-demo.XXXXXX")"
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

# --- (a) provider -----------------------------------------------------------------------------------------------
header "building the provider"
mkdir -p "$tmp/providers"
go build -ldflags "-X main.version=${VERSION:-demo}" -o "$tmp/providers/terraform-provider-vspherehpc" .
echo "built $tmp/providers/terraform-provider-vspherehpc"

# --- (b) lab simulator ------------------------------------------------------------------------------------------
header "building and starting the lab simulator"
go build -o "$tmp/vcsimlab" ./internal/cmd/vcsimlab
# stdout repeats the env file (with the password): not kept; stderr is the lab log.
# -hosts-need-reboot: the hosts apply passthrough and SR-IOV changes when they reboot (SIGHUP), as ESXi hosts
# without deviceRebindWithoutRebootSupported do.
"$tmp/vcsimlab" -listen 127.0.0.1:0 -hosts 4 -vms 3 -hosts-need-reboot -env-file "$tmp/lab.env" >/dev/null 2>"$tmp/lab.log" </dev/null &
lab_pid=$!
echo "lab simulator pid $lab_pid; waiting up to ${LAB_START_TIMEOUT}s for $tmp/lab.env"

lab_env_ready() {
  [[ -s "$tmp/lab.env" ]] || return 1
  # The file is complete once it defines everything the demo needs.
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

deadline=$((SECONDS + LAB_START_TIMEOUT))
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
echo "           datacenter ${VSPHERE_LAB_DATACENTER}, cluster ${VSPHERE_LAB_CLUSTER}, hosts ${VSPHERE_LAB_HOSTS}"

# --- (c) Terraform CLI configuration: use the freshly built provider --------------------------------------------
cat >"$tmp/dev.tfrc" <<EOF
provider_installation {
  dev_overrides {
    "vspherehpc/vspherehpc" = "$tmp/providers"
  }
  direct {}
}
EOF
export TF_CLI_CONFIG_FILE="$tmp/dev.tfrc"

# --- (d) apply examples/lab -------------------------------------------------------------------------------------
# The whole examples/ tree is copied so that relative module sources (../modules/...) keep working.
mkdir -p "$tmp/examples"
tar -C examples --exclude='.terraform' --exclude='.terraform.lock.hcl' --exclude='*.tfstate*' \
  --exclude='terraform.tfvars' -cf - . | tar -C "$tmp/examples" -xf -
work="$tmp/examples/lab"
[[ -n "$(compgen -G "$work/*.tf")" ]] || fail "no *.tf files in examples/lab"

export TF_VAR_datacenter="$VSPHERE_LAB_DATACENTER"
export TF_VAR_cluster="$VSPHERE_LAB_CLUSTER"
echo "TF_VAR_datacenter=$TF_VAR_datacenter"
echo "TF_VAR_cluster=$TF_VAR_cluster"

cd "$work"
# No `terraform init`: with dev_overrides it would try to reach registry.terraform.io for the provider.
# `terraform get` installs local modules only (no provider installation, no network).
tf get >/dev/null

header "terraform apply (examples/lab)"
echo "module.pvrdma: measure the MTU between every pair of hosts of ${VSPHERE_LAB_CLUSTER}, then build the PVRDMA"
echo "               switch, its port group and each host's PVRDMA settings"
echo "module.client: a PVRDMA adapter on hpc-node-0 and hpc-node-1"
echo "module.gpu:    a PVRDMA adapter, the two H100s of its host and the MMIO window on hpc-node-2"
echo "host step:     PCI passthrough on for the A100 of hpc-node-2's host, and SR-IOV on its first ConnectX-7"
echo "               InfiniBand PF; the lab's hosts apply both when they reboot"
tf apply -auto-approve -input=false || { show_lab_log; fail "terraform apply failed"; }

# One line of the outputs, e.g. the A100's reboot_required.
output_field() { tf output -json "$1" | sed -n "s/.*\"$2\": *\([^,}]*\).*/\1/p"; }
[[ "$(output_field gpu_host_passthrough reboot_required)" == true ]] || fail "the A100's passthrough should wait for a reboot"
echo "gpu_host_passthrough.reboot_required = true: the A100 waits for its host's reboot"

# SIGHUP makes the lab reboot its hosts, as an administrator would (maintenance mode, reboot).
reboot_hosts() {
  local before
  before=$(grep -c 'reboot' "$tmp/lab.log" || true)
  kill -HUP "$lab_pid"
  for _ in $(seq 1 50); do
    [[ $(grep -c 'reboot' "$tmp/lab.log" || true) -gt $before ]] && break
    sleep 0.1
  done
  grep 'reboot' "$tmp/lab.log" | tail -n 1 | sed 's/^vcsimlab: [0-9/]* [0-9:]* //'
}

header "an administrator reboots the hosts"
reboot_hosts

header "terraform apply after the reboot: the A100 joins hpc-node-2, passthrough on the first InfiniBand VF"
echo "The VFs exist now (vSphere links no VF to its PF, so a plan sees a VF only once SR-IOV made it)."
tf apply -auto-approve -input=false || { show_lab_log; fail "the apply after the reboot failed"; }
[[ "$(output_field infiniband reboot_required)" == true ]] || fail "the VF's passthrough should wait for a reboot"

header "an administrator reboots the hosts again"
reboot_hosts

header "terraform apply: the InfiniBand VF joins hpc-node-2 beside its GPUs"
echo "One vspherehpc_vm_gpu_mmio owns all of the VM's passthrough devices: GPUs and VF never fight."
tf apply -auto-approve -input=false || { show_lab_log; fail "the last apply failed"; }

header "terraform output"
tf output

header "second terraform plan (must be empty)"
plan_rc=0
tf plan -detailed-exitcode -input=false || plan_rc=$?
case "$plan_rc" in
  0) header "second plan: no changes" ;;
  2) fail "second plan: changes detected after apply (see the plan above); the provider does not converge" ;;
  *) show_lab_log; fail "second plan: terraform plan failed (exit $plan_rc)" ;;
esac

header "SOAP calls of one terraform refresh (counted by the lab)"
# SIGUSR1 makes the lab print the calls since the previous SIGUSR1, then reset.
lab_report() {
  local before
  before=$(grep -c 'SOAP calls: ' "$tmp/lab.log" || true)
  kill -USR1 "$lab_pid"
  for _ in $(seq 1 50); do
    [[ $(grep -c 'SOAP calls: ' "$tmp/lab.log" || true) -gt $before ]] && break
    sleep 0.1
  done
  grep 'SOAP calls: ' "$tmp/lab.log" | tail -n 1 | sed 's/^vcsimlab: [0-9/]* [0-9:]* //'
}
lab_report >/dev/null
tf refresh -input=false >/dev/null
echo "refresh: $(lab_report)"

header "drift: an administrator changes two things in the vSphere Client"
# SIGUSR2 makes the lab lower the switch MTU to 1500 and disable the first host's pvrdma ruleset.
before=$(grep -c 'drift' "$tmp/lab.log" || true)
kill -USR2 "$lab_pid"
for _ in $(seq 1 50); do
  [[ $(grep -c 'drift' "$tmp/lab.log" || true) -gt $before ]] && break
  sleep 0.1
done
drift_line=$(grep 'drift' "$tmp/lab.log" | tail -n 1 | sed 's/^vcsimlab: [0-9/]* [0-9:]* //')
echo "$drift_line"
[[ $drift_line == drift:* ]] || { show_lab_log; fail "the lab could not make the out-of-band changes"; }

header "terraform plan: Terraform sees both changes and plans to put them back"
plan_rc=0
tf plan -detailed-exitcode -input=false -no-color -out="$tmp/drift.plan" >"$tmp/drift.out" 2>&1 || plan_rc=$?
# The two resources and the attributes that drifted, as the plan shows them.
grep -E '^\s+# .* (will|must) be|^\s+~ (mtu|firewall_enabled) +=|^Plan:' "$tmp/drift.out" || true
[[ $plan_rc == 2 ]] || { cat "$tmp/drift.out"; fail "drift plan: expected changes (exit 2), got exit $plan_rc"; }
grep -qE '~ mtu += 1500 -> 9000' "$tmp/drift.out" || { cat "$tmp/drift.out"; fail "drift plan does not restore the switch MTU"; }
grep -qE '~ firewall_enabled += false -> true' "$tmp/drift.out" || { cat "$tmp/drift.out"; fail "drift plan does not re-enable the ruleset"; }

header "terraform apply: the drift is fixed"
tf apply -input=false -no-color "$tmp/drift.plan" | grep -E '^Apply complete' || fail "applying the drift fix failed"

header "terraform plan once more (must be empty)"
plan_rc=0
tf plan -detailed-exitcode -input=false >/dev/null 2>&1 || plan_rc=$?
[[ $plan_rc == 0 ]] || fail "after fixing the drift: plan exit $plan_rc, want no changes"
echo "No changes: the lab matches the configuration again."

cd "$repo_root"
stop_lab
header "demo finished (the lab is stopped; the temporary workspace is removed on exit)"
