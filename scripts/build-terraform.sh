#!/usr/bin/env bash
# build-terraform.sh VERSION OUT: builds Terraform VERSION (1.14 and later) from the Go module proxy into OUT.
#
# `go install github.com/hashicorp/terraform@v1.14.x` is refused (its go.mod has replace directives), and its
# source does not build as the main module either: ten replace directives point at nested modules the module
# proxy does not serve (nine remote-state backends and internal/legacy). So the source is copied, those replace
# and require lines are dropped, and the nine backends (azurerm, consul, cos, gcs, kubernetes, oci, oss, pg, s3)
# are taken out of the backend list. The binary has the local, http, inmem, remote and cloud backends only, which
# is all the tests use; the version is stamped as a release (no "-dev").
set -euo pipefail
version="$1" out="$2"
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
dir="$(cd "$src" && GOFLAGS= go mod download -json "github.com/hashicorp/terraform@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
cp -R "$dir/." "$src/"
chmod -R u+w "$src"
cd "$src"
nested='internal/(backend/remote-state/(azure|consul|cos|gcs|kubernetes|oci|oss|pg|s3)|legacy)'
sed -i -E "\#^replace github\.com/hashicorp/terraform/$nested #d; \#^[[:space:]]*github\.com/hashicorp/terraform/$nested #d" go.mod
for b in Azure Consul Cos GCS Kubernetes OCI OSS Pg S3; do
	sed -i -E "/^[[:space:]]*backend$b \"/d; /backend$b\.New\(/d" internal/backend/init/init.go
done
GOFLAGS= go build -trimpath -ldflags "-X github.com/hashicorp/terraform/version.dev=no" -o "$out" .
