#!/usr/bin/env bash
# `make demo-adopt` (part of `make demo`): start the lab as an administrator built it by hand (vcsimlab
# -hand-built: switches, host settings, passthrough, SR-IOV, VMs with PVRDMA and SR-IOV adapters and GPUs, one switch
# with a teamed uplink and one VM with too small an MMIO window), list it with `terraform query` and
# examples/adopt/adopt.tfquery.hcl, generate the configuration, plan it (imports, and the two changes the
# hand-built lab needs), apply it, and prove the next plan is empty.
#
# Needs Terraform 1.14 or later as $TERRAFORM (the Makefile passes the one `make terraform-newest` builds) and Go.
set -euo pipefail

LAB_SCRIPT=demo-adopt
# shellcheck source=../../scripts/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lab.sh"

build_provider
start_lab -hosts 4 -vms 3 -hand-built

work="$tmp/adopt"
mkdir -p "$work"
cp examples/adopt/main.tf examples/adopt/adopt.tfquery.hcl "$work/"
export TF_VAR_datacenter="$VSPHERE_LAB_DATACENTER"
cd "$work"

header "terraform query: what the hand-built lab holds, one vCenter call per list block"
lab_report >/dev/null
tf query -no-color 2>&1 | grep -E '^list\.|Warning: ' || { show_lab_log; fail "terraform query failed"; }
echo "query: $(lab_report)"

header "terraform query -generate-config-out=adopted.tf"
tf query -no-color -generate-config-out=adopted.tf >/dev/null 2>&1 || { show_lab_log; fail "generating the configuration failed"; }
found=$(grep -c '^resource "vspherehpc_' adopted.tf)
echo "adopted.tf: $found resources with their import blocks, for example:"
sed -n '/^resource "vspherehpc_rdma_dvs"/,/^}/p' adopted.tf | head -n 30

header "terraform plan: imports, and the two changes the hand-built lab needs"
tf plan -no-color -input=false -out="$tmp/adopt.plan" >"$tmp/adopt.out" 2>&1 || { cat "$tmp/adopt.out"; fail "the plan of the generated configuration failed"; }
grep -E '^\s+# .* will be (imported|updated)|^\s+[~+-] (vmnic|mmio_size_gb) |^Plan:' "$tmp/adopt.out" || true
grep -qE "^Plan: $found to import, 0 to add, 2 to change, 0 to destroy\.$" "$tmp/adopt.out" ||
  { cat "$tmp/adopt.out"; fail "want $found imports and exactly two changes (the teamed uplink, the MMIO window)"; }

header "terraform apply"
tf apply -no-color -input=false "$tmp/adopt.plan" | grep -E '^Apply complete' || fail "applying the adoption failed"

header "terraform plan once more (must be empty)"
plan_rc=0
tf plan -detailed-exitcode -input=false >/dev/null 2>&1 || plan_rc=$?
[[ $plan_rc == 0 ]] || fail "after adopting: plan exit $plan_rc, want no changes"
echo "No changes: Terraform manages the hand-built lab."

cd "$repo_root"
stop_lab
header "adopt demo finished (the lab is stopped; the temporary workspace is removed on exit)"
