#!/usr/bin/env bash
# `make demo`: build the provider, start the simulated vSphere lab on 127.0.0.1, apply examples/lab with a
# real Terraform through a dev_overrides CLI config, print the outputs, prove that a second plan is empty,
# and stop the lab. Everything happens in a temporary directory; ~/.terraformrc is never read or written.
#
# Needs Go and a terraform binary: $TERRAFORM (absolute path, set by the Makefile), else `terraform` on
# PATH, else .cache/bin/terraform (built by `make terraform`).
set -euo pipefail

LAB_SCRIPT=demo
# shellcheck source=../../scripts/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lab.sh"

build_provider
# -hosts-need-reboot: the hosts apply passthrough and SR-IOV changes when they reboot, as ESXi hosts without
# deviceRebindWithoutRebootSupported do; -reboot-time: how long a reboot the provider asks for keeps a host away;
# -dgx-hosts 2: the GPU VM's host (hpc-node-2's) is an NVIDIA DGX H100, eight H100s each under a PCIe switch with
# its ConnectX-7 InfiniBand card.
start_lab -hosts 4 -vms 3 -hosts-need-reboot -reboot-time 1s -dgx-hosts 2
echo "           hosts ${VSPHERE_LAB_HOSTS}"

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

header "terraform apply (examples/lab): one apply, from bare hosts to the GPU + InfiniBand VM"
echo "module.pvrdma: measure the MTU between every pair of hosts of ${VSPHERE_LAB_CLUSTER}, then build the PVRDMA"
echo "               switch, its port group and each host's PVRDMA settings"
echo "module.client: a PVRDMA adapter on hpc-node-0 and hpc-node-1; hpc-node-1's host set to Shared Direct and"
echo "               rebooted inside the apply, then two grid_a100-20c vGPUs on hpc-node-1"
echo "pairing:       hpc-node-2's host is a DGX H100; the configuration picks a free H100 and the ConnectX-7 card under"
echo "               the same PCIe switch (vspherehpc_host's pcie_switch), for GPUDirect RDMA"
echo "host step:     SR-IOV on that card, then passthrough on its first VF; the lab's hosts apply both only when they"
echo "               reboot, and reboot_allowed reboots the host inside the apply (maintenance mode, reboot, back, out"
echo "               of maintenance mode), twice"
echo "module.gpu:    a PVRDMA adapter, the H100, the card's VF, peer-to-peer and the MMIO window on hpc-node-2"
started=$SECONDS
tf apply -auto-approve -input=false || { show_lab_log; fail "terraform apply failed"; }
echo "one apply, reboots included: $((SECONDS - started)) s"

# One line of the outputs, e.g. the A100's reboot_required.
output_field() { tf output -json "$1" | sed -n "s/.*\"$2\": *\([^,}]*\).*/\1/p"; }
[[ "$(output_field gpu_host_passthrough reboot_required)" == false ]] || fail "the GPU host should not wait for a reboot"
[[ "$(output_field infiniband reboot_required)" == false ]] || fail "SR-IOV should not wait for a reboot"
# The DGX H100's first pair (vcsimlab's topology.go): GPU 0 at 19:00.0 beside its card at 18:00.0.
tf output -json gpu_node | grep -q '"gpus":\["0000:19:00.0"\]' || fail "the GPU VM should have the DGX host's GPU 0"
tf output -json infiniband | grep -q '"physical_function":"0000:18:00.0"' || fail "SR-IOV should be on the card beside GPU 0"
tf output -json infiniband | grep -q '"gpu_vm_devices":\["0000:18:00.1"\]' || fail "the GPU VM should have the card's first VF"
tf output -json vgpu_node | grep -q '"grid_a100-20c":2' || fail "the vGPU client should have two grid_a100-20c vGPUs"
[[ "$(output_field vgpu_node reboot_required)" == false ]] || fail "the vGPU client's host should not wait for a reboot"

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
lab_report >/dev/null
tf refresh -input=false >/dev/null
echo "refresh: $(lab_report)"

header "drift: an administrator changes two things in the vSphere Client"
# SIGUSR2 makes the lab lower the switch MTU to 1500 and disable the first host's pvrdma ruleset.
drift_line=$(lab_signal USR2 'drift: \|drift failed')
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
