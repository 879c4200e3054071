#!/usr/bin/env bash
# `make bench-scale`: a benchmark of the provider at fleet size, not a test: it prints numbers and asserts none.
#
# Starts the lab simulator with HOSTS hosts (default 64) and VMS VMs (default 256), every call delayed by
# LATENCY (default 20ms, a real vCenter's round trip), then applies a configuration as a platform team writes it:
# the PVRDMA switch over every host, host settings on every host, a PVRDMA adapter on every VM, each host and VM
# found by a look-up by name. It prints wall time and calls by method (and endpoint) for the apply, one refresh and
# one plan, then Terraform's own floor measured in the same run (as many objects refreshed with no I/O) and the
# refresh's ratio to it.
# PARALLELISM (default: Terraform's 10) sets terraform -parallelism. REFRESH_LOG=FILE writes the provider's TRACE
# log of the refresh alone there (every call with its timing, for a timeline; it slows the refresh down).
set -euo pipefail

HOSTS="${HOSTS:-64}"
VMS="${VMS:-256}"
LATENCY="${LATENCY:-20ms}"
PARALLELISM="${PARALLELISM:-10}"

LAB_SCRIPT=bench-scale
# shellcheck source=lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/lab.sh"

LAB_START_TIMEOUT="${LAB_START_TIMEOUT:-300}"
build_provider
start_lab -hosts "$HOSTS" -vms "$VMS" -latency "$LATENCY"

work="$tmp/bench"
mkdir -p "$work"
cat >"$work/main.tf" <<'EOF'
terraform {
  required_providers {
    vspherehpc = {
      source = "vspherehpc/vspherehpc"
    }
  }
}

provider "vspherehpc" {}

variable "datacenter" {
  type = string
}

variable "hosts" {
  type = list(string)
}

variable "vms" {
  type = list(string)
}

data "vspherehpc_datacenter" "dc" {
  name = var.datacenter
}

data "vspherehpc_host" "h" {
  for_each      = toset(var.hosts)
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

data "vspherehpc_virtual_machine" "vm" {
  for_each      = toset(var.vms)
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

resource "vspherehpc_rdma_dvs" "fabric" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "bench-dvs"
  port_group {
    name = "bench-pvrdma"
  }
  dynamic "host" {
    for_each = data.vspherehpc_host.h
    content {
      host_system_id = host.value.id
      vmnic          = "vmnic4"
    }
  }
}

resource "vspherehpc_host_pvrdma_settings" "h" {
  for_each       = data.vspherehpc_host.h
  host_system_id = each.value.id
  vmknic         = "vmk1"
}

resource "vspherehpc_vm_pvrdma_nic" "n" {
  for_each                  = data.vspherehpc_virtual_machine.vm
  virtual_machine_id        = each.value.id
  distributed_port_group_id = vspherehpc_rdma_dvs.fabric.port_group_id
}
EOF
vms=()
for ((i = 0; i < VMS; i++)); do vms+=("\"hpc-node-$i\""); done
cat >"$work/terraform.tfvars" <<EOF
datacenter = "$VSPHERE_LAB_DATACENTER"
hosts      = ["${VSPHERE_LAB_HOSTS//,/\", \"}"]
vms        = [$(IFS=,; echo "${vms[*]}")]
EOF
cd "$work"

# timed LABEL COMMAND...: runs a terraform command and prints its wall time and the lab's calls by method (and
# endpoint); the wall time is kept in seconds_LABEL.
timed() {
  local label=$1 start end
  shift
  lab_report >/dev/null
  start=$(date +%s.%N)
  "$@" >"$tmp/$label.out" 2>&1 || { tail -n 40 "$tmp/$label.out"; show_lab_log; fail "$label failed"; }
  end=$(date +%s.%N)
  printf -v "seconds_$label" '%s' "$(echo "$end - $start" | bc)"
  printf '%-8s %6.1f s  %s\n' "$label:" "$(echo "$end - $start" | bc)" "$(lab_report)"
}

header "$HOSTS hosts, $VMS VMs, $LATENCY per call, parallelism $PARALLELISM: $((1 + HOSTS + VMS)) resources and $((1 + HOSTS + VMS)) look-ups"
timed apply tf apply -auto-approve -input=false -parallelism="$PARALLELISM"
if [[ -n "${REFRESH_LOG:-}" ]]; then
  rm -f "$REFRESH_LOG"
  timed refresh env TF_LOG_PROVIDER=TRACE TF_LOG_PATH="$REFRESH_LOG" "$TERRAFORM" apply -refresh-only -auto-approve -input=false -parallelism="$PARALLELISM"
else
  timed refresh tf apply -refresh-only -auto-approve -input=false -parallelism="$PARALLELISM"
fi
timed plan tf plan -detailed-exitcode -input=false -parallelism="$PARALLELISM"

# Terraform's own floor, in the same run: as many of this provider's objects as the refresh reads (resources and
# look-ups), refreshed with no I/O at all (vspherehpc_mmio_size data sources compute and call nothing).
objects=$((2 * (1 + HOSTS + VMS)))
floor="$tmp/floor"
mkdir -p "$floor"
cat >"$floor/main.tf" <<TF
terraform {
  required_providers {
    vspherehpc = {
      source = "vspherehpc/vspherehpc"
    }
  }
}

data "vspherehpc_mmio_size" "f" {
  count = $objects
  gpu {
    count     = 1
    memory_gb = 80
  }
}
TF
cd "$floor"
tf apply -auto-approve -input=false >/dev/null
timed floor tf apply -refresh-only -auto-approve -input=false -parallelism="$PARALLELISM"
printf 'refresh: %.2f x the floor (%d objects refreshed with no I/O), %.1f s above it\n' \
  "$(echo "$seconds_refresh / $seconds_floor" | bc -l)" "$objects" "$(echo "$seconds_refresh - $seconds_floor" | bc -l)"
