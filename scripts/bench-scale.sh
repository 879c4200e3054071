#!/usr/bin/env bash
# `make bench-scale`: a benchmark of the provider at fleet size, not a test: it prints numbers and asserts none.
#
# Starts the lab simulator with HOSTS hosts (default 64) and VMS VMs (default 256), every call delayed by
# LATENCY (default 20ms, a real vCenter's round trip), then applies one of four configurations (FLEET):
#   lookups (default): as the guide "Building a PVRDMA cluster" writes a fleet: the PVRDMA switch over every
#            host, host settings on every host, a PVRDMA adapter on every VM, each host and VM found by a look-up
#            by name, the resources' for_each over maps of ids computed once in locals;
#   objects: the same with for_each over the look-ups' whole objects (for_each = data.vspherehpc_host.h) and
#            toset(var.hosts): Terraform evaluates a for_each again for each instance, so its CPU grows with the
#            square of the VMs (the guide says why);
#   cluster: lookups with the hosts' ids from vspherehpc_cluster (one object for every host) rather than a
#            vspherehpc_host each, as the examples take them where only ids are needed;
#   vms:     issue 25's: every VM, given by id (as the vSphere provider's vsphere_virtual_machine.id gives it), with a
#            PVRDMA adapter and its GPU/MMIO settings: 2 x VMS resources. The switch and host settings they need are
#            applied first, in a configuration of their own, and not measured.
# It prints wall time and calls by method (and endpoint) for the apply, then refreshes and plans against two floors
# measured in the same run, alternated: Terraform's own floor (as many objects, each a small vspherehpc_mmio_size data
# source: no I/O, almost no data) and the shaped floor (as many terraform_data resources, each holding in
# triggers_replace an object of the shape and size of one of the fleet's data sources and resources, as its state has
# it: Terraform core's cost of the data itself, with no provider process). The ratios to each floor separate what
# Terraform does with the data from what this provider adds.
# PARALLELISM (default: Terraform's 10) sets terraform -parallelism. REFRESH_LOG=FILE writes the provider's TRACE
# log of the refresh alone there (every call with its timing, for a timeline; it slows the refresh down).
# With FLEET=vms and VSPHERE_PROVIDER_BINARY naming a terraform-provider-vsphere binary (see the README), the
# vSphere provider imports the same VMs into vsphere_virtual_machine resources and its refresh of them is timed
# beside this provider's, ROUNDS (default 3) times each, alternated. PERSIST_SESSION=true turns the provider's
# persist_session on (sessions kept in the workspace): a run resumes the last run's session instead of logging in.
# CPU_SPLIT=1 prints, for each refresh, plan and floor, the CPU time of Terraform, of this provider's process (run
# under /usr/bin/time through a wrapper) and of the lab.
set -euo pipefail

HOSTS="${HOSTS:-64}"
VMS="${VMS:-256}"
LATENCY="${LATENCY:-20ms}"
PARALLELISM="${PARALLELISM:-10}"
FLEET="${FLEET:-lookups}"
ROUNDS="${ROUNDS:-3}"
[[ "$FLEET" =~ ^(lookups|objects|cluster|vms)$ ]] || { echo "FLEET=$FLEET: want lookups, objects, cluster or vms" >&2; exit 2; }

LAB_SCRIPT=bench-scale
# shellcheck source=lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/lab.sh"

LAB_START_TIMEOUT="${LAB_START_TIMEOUT:-300}"
if [[ "${PERSIST_SESSION:-}" == true ]]; then
  export VSPHERE_PERSIST_SESSION=true VSPHEREHPC_SESSION_PATH="$tmp/sessions"
fi
build_provider
start_lab -hosts "$HOSTS" -vms "$VMS" -latency "$LATENCY"
if [[ -n "${CPU_SPLIT:-}" ]]; then
  mkdir -p "$tmp/providers-timed"
  printf '#!/bin/sh\nexec /usr/bin/time -a -o "%s" -f "%%U %%S" "%s" "$@"\n' "$tmp/provider-cpu" \
    "$tmp/providers/terraform-provider-vspherehpc" >"$tmp/providers-timed/terraform-provider-vspherehpc"
  chmod +x "$tmp/providers-timed/terraform-provider-vspherehpc"
  sed -i "s|= \"$tmp/providers\"|= \"$tmp/providers-timed\"|" "$tmp/dev.tfrc"
fi

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
  for_each      = local.host_names
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

data "vspherehpc_virtual_machine" "vm" {
  for_each      = local.vm_names
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

# As the guide "Building a PVRDMA cluster" writes it for a fleet: for_each over maps computed once, since
# Terraform evaluates a resource's for_each again for each of its instances.
locals {
  host_names = { for n in var.hosts : n => n }
  vm_names   = { for n in var.vms : n => n }
  host_ids   = { for k, h in data.vspherehpc_host.h : k => h.id }
  vm_ids     = { for k, vm in data.vspherehpc_virtual_machine.vm : k => vm.id }
}

resource "vspherehpc_rdma_dvs" "fabric" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "bench-dvs"
  port_group {
    name = "bench-pvrdma"
  }
  dynamic "host" {
    for_each = local.host_ids
    content {
      host_system_id = host.value
      vmnic          = "vmnic4"
    }
  }
}

resource "vspherehpc_host_pvrdma_settings" "h" {
  for_each       = local.host_ids
  host_system_id = each.value
  vmknic         = "vmk1"
}

EOF
vms=()
for ((i = 0; i < VMS; i++)); do vms+=("\"hpc-node-$i\""); done
cat >"$work/terraform.tfvars" <<EOF
datacenter = "$VSPHERE_LAB_DATACENTER"
hosts      = ["${VSPHERE_LAB_HOSTS//,/\", \"}"]
vms        = [$(IFS=,; echo "${vms[*]}")]
EOF
if [[ "$FLEET" == cluster ]]; then
  # The hosts from the cluster: no vspherehpc_host, the switch and host settings over a map of names to ids.
  sed -i -e '/^data "vspherehpc_host" "h" {$/,/^}$/c\
variable "cluster" {\
  type = string\
}\
\
data "vspherehpc_cluster" "c" {\
  datacenter_id = data.vspherehpc_datacenter.dc.id\
  name          = var.cluster\
}' -e 's/^  host_ids   = .*/  host_ids   = zipmap(data.vspherehpc_cluster.c.host_names, data.vspherehpc_cluster.c.host_system_ids)/' \
    -e '/^  host_names = /d' "$work/main.tf"
  echo "cluster    = \"$VSPHERE_LAB_CLUSTER\"" >>"$work/terraform.tfvars"
fi
if [[ "$FLEET" != vms ]]; then
  cat >>"$work/main.tf" <<'EOF'

resource "vspherehpc_vm_pvrdma_nic" "n" {
  for_each                  = local.vm_ids
  virtual_machine_id        = each.value
  distributed_port_group_id = vspherehpc_rdma_dvs.fabric.port_group_id
}
EOF
  if [[ "$FLEET" == objects ]]; then
    # for_each over the look-ups' whole objects and over toset(): Terraform evaluates each again for each
    # instance, and reads every instance of the data source each time.
    sed -i -e '/^# As the guide/,/^}$/d' \
      -e 's/local\.host_names/toset(var.hosts)/; s/local\.vm_names/toset(var.vms)/' \
      -e 's/local\.host_ids/data.vspherehpc_host.h/; s/local\.vm_ids/data.vspherehpc_virtual_machine.vm/' \
      -e 's/host_system_id = host\.value$/host_system_id = host.value.id/' \
      -e 's/^\(  [a-z_]*_id *\) = each\.value$/\1 = each.value.id/' "$work/main.tf"
  fi
  fleet="$work"
  objects=$((2 * (1 + HOSTS + VMS))) # resources and look-ups
  what="$((1 + HOSTS + VMS)) resources and $((1 + HOSTS + VMS)) look-ups"
  if [[ "$FLEET" == cluster ]]; then
    objects=$((1 + HOSTS + VMS + 2 + VMS))
    what="$((1 + HOSTS + VMS)) resources and $((2 + VMS)) look-ups (the hosts from the cluster)"
  fi
else
  cat >>"$work/main.tf" <<'EOF'

output "vms" {
  value = [for name in var.vms : data.vspherehpc_virtual_machine.vm[name].id]
}

output "port_group" {
  value = vspherehpc_rdma_dvs.fabric.port_group_id
}
EOF
  header "setup, not measured: the switch over every host and host settings on every host"
  (cd "$work" && tf apply -auto-approve -input=false -parallelism="$PARALLELISM" >"$tmp/setup.out" 2>&1) ||
    { tail -n 40 "$tmp/setup.out"; show_lab_log; fail "the setup failed"; }
  fleet="$tmp/vms"
  mkdir -p "$fleet"
  cat >"$fleet/main.tf" <<'EOF'
terraform {
  required_providers {
    vspherehpc = {
      source = "vspherehpc/vspherehpc"
    }
  }
}

provider "vspherehpc" {}

variable "vms" {
  type = list(string)
}

variable "port_group" {
  type = string
}

resource "vspherehpc_vm_pvrdma_nic" "n" {
  count                     = length(var.vms)
  virtual_machine_id        = var.vms[count.index]
  distributed_port_group_id = var.port_group
}

resource "vspherehpc_vm_gpu_mmio" "g" {
  count              = length(var.vms)
  virtual_machine_id = var.vms[count.index]
  mmio_size_gb       = 256
  power_off_allowed  = true
}
EOF
  printf 'vms        = %s\nport_group = %s\n' "$(cd "$work" && tf output -json vms)" "$(cd "$work" && tf output -json port_group)" \
    >"$fleet/terraform.tfvars"
  objects=$((2 * VMS))
  what="$objects resources: a PVRDMA adapter and GPU/MMIO settings on each VM, given by id"
fi
cd "$fleet"

# timed LABEL COMMAND...: runs a terraform command and prints its wall time and the lab's calls by method (and
# endpoint); the wall times of each label are kept in seconds[LABEL].
# answered2[LABEL] and answered4[LABEL] keep the sums of each run's two and four longest answers of the lab, in
# seconds: its round trips but for the network.
declare -A seconds answered2 answered4
timed() {
  local label=$1 start end report longest cpu="" lab_ticks
  shift
  lab_report >/dev/null
  if [[ -n "${CPU_SPLIT:-}" && $1 != tf ]]; then
    rm -f "$tmp/provider-cpu"
    lab_ticks=$(lab_cpu_ticks)
    set -- /usr/bin/time -o "$tmp/command-cpu" -f "%U %S" "$@"
  fi
  start=$(date +%s.%N)
  "$@" >"$tmp/$label.out" 2>&1 || { tail -n 40 "$tmp/$label.out"; show_lab_log; fail "$label failed"; }
  end=$(date +%s.%N)
  if [[ -n "${lab_ticks:-}" ]]; then
    local all provider=0
    all=$(awk '{print $1 + $2}' "$tmp/command-cpu")
    [[ ! -s "$tmp/provider-cpu" ]] || provider=$(awk '{s += $1 + $2} END {print s}' "$tmp/provider-cpu")
    cpu=$(printf '; CPU: Terraform %.2f s, provider %.2f s, lab %.2f s' "$(echo "$all - $provider" | bc -l)" "$provider" \
      "$(echo "($(lab_cpu_ticks) - $lab_ticks) / $(getconf CLK_TCK)" | bc -l)")
  fi
  seconds[$label]+=" $(echo "$end - $start" | bc)"
  report=$(lab_report)
  read -ra longest <<<"$(sed -n 's/.*longest answers: //p' <<<"$report" | tr -dc '0-9 ')"
  longest+=(0 0 0 0)
  answered2[$label]+=" $(echo "(${longest[0]} + ${longest[1]}) / 1000" | bc -l)"
  answered4[$label]+=" $(echo "(${longest[0]} + ${longest[1]} + ${longest[2]} + ${longest[3]}) / 1000" | bc -l)"
  printf '%-12s %6.2f s  %s%s\n' "$label:" "$(echo "$end - $start" | bc)" "$report" "$cpu"
}

# lab_cpu_ticks is the lab process's CPU time so far, in clock ticks (utime + stime of /proc/PID/stat).
lab_cpu_ticks() { awk '{print $14 + $15}' "/proc/$lab_pid/stat"; }

header "$HOSTS hosts, $VMS VMs, $LATENCY per call, parallelism $PARALLELISM: $what"
timed apply tf apply -auto-approve -input=false -parallelism="$PARALLELISM"

# Terraform's own floor, in the same run: as many of this provider's objects as the refresh reads (resources and
# look-ups), refreshed with no I/O at all (vspherehpc_mmio_size data sources compute and call nothing).
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

# The shaped floor: every object of the fleet's state (data sources and resources) as a terraform_data's
# triggers_replace, which Terraform stores once (input would be stored twice, with output). Each object is written
# into the configuration as a literal (JSON syntax, strings escaped where "${" and "%{" start templates): evaluated
# once per object, where a jsondecode()d file behind for_each took Terraform 1.6 times as long. The values
# are of a dynamic type, carried with their type through plan and state, which a provider's schema-typed objects are
# not: this floor prices the data higher than Terraform prices the same data from a provider, an upper bound of
# Terraform's cost of it (CPU_SPLIT=1 splits a command's CPU between Terraform, the provider and the lab directly).
# terraform_data runs inside Terraform: one vspherehpc_mmio_size starts this provider's process, as the fleet's
# commands do.
shaped="$tmp/shaped"
mkdir -p "$shaped"
(cd "$fleet" && tf show -json) >"$tmp/state.json"
header "the fleet's state by type: objects, and bytes of their JSON in all and each"
jq -r '.values.root_module.resources[] | "\(.mode).\(.type) \(.values | tojson | length)"' "$tmp/state.json" |
  awk '{n[$1]++; b[$1] += $2} END {for (k in n) printf "%-45s %5d %10d %8d\n", k, n[k], b[k], b[k] / n[k]}' | sort
jq '{
  terraform: {required_providers: {vspherehpc: {source: "vspherehpc/vspherehpc"}}},
  data: {vspherehpc_mmio_size: {provider_started: {gpu: [{count: 1, memory_gb: 80}]}}},
  resource: {terraform_data: ([.values.root_module.resources[].values
    | walk(if type == "string" then gsub("\\$\\{"; "$${") | gsub("%\\{"; "%%{") else . end)]
    | to_entries | map({key: "o\(.key)", value: {triggers_replace: .value}}) | from_entries)}}' "$tmp/state.json" >"$shaped/main.tf.json"
shaped_objects=$(jq '.resource.terraform_data | length' "$shaped/main.tf.json")
[[ "$shaped_objects" == "$objects" ]] || fail "the shaped floor has $shaped_objects objects, the fleet $objects"
(cd "$shaped" && tf apply -auto-approve -input=false >/dev/null) || fail "applying the shaped floor failed"
shaped_bytes=$(jq -c '[.values.root_module.resources[].values]' "$tmp/state.json" | wc -c)

sides=(refresh plan floor floor-plan shaped shaped-plan)
if [[ "$FLEET" == vms && -n "${VSPHERE_PROVIDER_BINARY:-}" ]]; then
  [[ -x "$VSPHERE_PROVIDER_BINARY" ]] || fail "VSPHERE_PROVIDER_BINARY=$VSPHERE_PROVIDER_BINARY is not an executable file"
  vsphere="$tmp/vsphere"
  mkdir -p "$vsphere/plugins"
  ln -s "$VSPHERE_PROVIDER_BINARY" "$vsphere/plugins/terraform-provider-vsphere"
  cat >"$vsphere/dev.tfrc" <<EOF
provider_installation {
  dev_overrides {
    "vmware/vsphere" = "$vsphere/plugins"
  }
  direct {}
}
EOF
  # The same VMs imported (import blocks with for_each: Terraform 1.7 or later), nothing changed: the vSphere
  # provider then refreshes what it manages of them, as this provider refreshes their adapters and GPU settings.
  cat >"$vsphere/main.tf" <<'EOF'
terraform {
  required_providers {
    vsphere = {
      source = "vmware/vsphere"
    }
  }
}

variable "datacenter" {
  type = string
}

variable "cluster" {
  type = string
}

variable "vms" {
  type = list(string)
}

data "vsphere_datacenter" "dc" {
  name = var.datacenter
}

data "vsphere_compute_cluster" "hpc" {
  name          = var.cluster
  datacenter_id = data.vsphere_datacenter.dc.id
}

import {
  for_each = toset(var.vms)
  to       = vsphere_virtual_machine.node[each.key]
  id       = "/${var.datacenter}/vm/${each.key}"
}

resource "vsphere_virtual_machine" "node" {
  for_each                   = toset(var.vms)
  name                       = each.key
  resource_pool_id           = data.vsphere_compute_cluster.hpc.resource_pool_id
  wait_for_guest_net_timeout = 0
  disk {
    label = "disk0"
    size  = 20
  }
  lifecycle {
    ignore_changes = all
  }
}
EOF
  cp "$work/terraform.tfvars" "$vsphere/terraform.tfvars"
  echo "cluster = \"$VSPHERE_LAB_CLUSTER\"" >>"$vsphere/terraform.tfvars"
  vsphere_tf() { (cd "$vsphere" && TF_CLI_CONFIG_FILE="$vsphere/dev.tfrc" VSPHERE_ALLOW_UNVERIFIED_SSL=true "$TERRAFORM" "$@"); }
  header "the vSphere provider imports the same $VMS VMs"
  timed import vsphere_tf apply -auto-approve -input=false -parallelism="$PARALLELISM"
  sides+=(vsphere)
fi

# Refreshes of this provider's fleet, the floor (and the vSphere provider's VMs), alternated, ROUNDS times.
header "refreshes and plans at parallelism $PARALLELISM, alternated with the floors', $ROUNDS rounds"
for ((round = 1; round <= ROUNDS; round++)); do
  for side in "${sides[@]}"; do
    case $side in
      refresh)
        if [[ -n "${REFRESH_LOG:-}" && $round == 1 ]]; then
          rm -f "$REFRESH_LOG"
          timed refresh env -C "$fleet" TF_LOG_PROVIDER=TRACE TF_LOG_PATH="$REFRESH_LOG" "$TERRAFORM" apply -refresh-only -auto-approve -input=false -parallelism="$PARALLELISM"
        else
          timed refresh env -C "$fleet" "$TERRAFORM" apply -refresh-only -auto-approve -input=false -parallelism="$PARALLELISM"
        fi
        ;;
      plan) timed plan env -C "$fleet" "$TERRAFORM" plan -detailed-exitcode -input=false -parallelism="$PARALLELISM" ;;
      floor) timed floor env -C "$floor" "$TERRAFORM" apply -refresh-only -auto-approve -input=false -parallelism="$PARALLELISM" ;;
      floor-plan) timed floor-plan env -C "$floor" "$TERRAFORM" plan -detailed-exitcode -input=false -parallelism="$PARALLELISM" ;;
      shaped) timed shaped env -C "$shaped" "$TERRAFORM" apply -refresh-only -auto-approve -input=false -parallelism="$PARALLELISM" ;;
      shaped-plan) timed shaped-plan env -C "$shaped" "$TERRAFORM" plan -detailed-exitcode -input=false -parallelism="$PARALLELISM" ;;
      vsphere) timed vsphere vsphere_tf apply -refresh-only -auto-approve -input=false -parallelism="$PARALLELISM" ;;
    esac
  done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '\n%d objects: the floor is small vspherehpc_mmio_size data sources, the shaped floor terraform_data objects of the fleet'"'"'s shapes (%d KB of JSON)\n' \
  "$objects" "$((shaped_bytes / 1024))"
# A round trip is the latency and what the server takes to answer: the lab's longest answers of a command are its
# round trips as the lab served them, its own work included (the first prefetch, the login, the service content's
# read, the logout, each at least one latency long). This holds for a command that makes its calls one after
# another, as these do; calls at once would be counted as several.
for command in refresh plan; do
  suffix=""
  [[ $command == plan ]] && suffix="-plan"
  took=$(median <<<"${seconds[$command]}")
  floor_s=$(median <<<"${seconds[floor$suffix]}")
  shaped_s=$(median <<<"${seconds[shaped$suffix]}")
  two=$(median <<<"${answered2[$command]}")
  four=$(median <<<"${answered4[$command]}")
  printf '%-7s %.2f s: %.2f x the floor (%.2f s), %.2f x the shaped floor (%.2f s)\n' \
    "$command" "$took" "$(echo "$took / $floor_s" | bc -l)" "$floor_s" "$(echo "$took / $shaped_s" | bc -l)" "$shaped_s"
  printf '        the floor x 1.15 + the 2 longest answers (%.3f s): %.2f s; + the 4 longest (%.3f s): %.2f s\n' \
    "$two" "$(echo "$floor_s * 1.15 + $two" | bc -l)" "$four" "$(echo "$floor_s * 1.15 + $four" | bc -l)"
done
refresh=$(median <<<"${seconds[refresh]}")
if [[ -n "${seconds[vsphere]:-}" ]]; then
  vsphere_s=$(median <<<"${seconds[vsphere]}")
  printf 'the vSphere provider refreshing the same %d VMs: %.2f s, %.1f x this provider'"'"'s refresh\n' "$VMS" "$vsphere_s" \
    "$(echo "$vsphere_s / $refresh" | bc -l)"
fi
