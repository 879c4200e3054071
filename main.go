// Command terraform-provider-vspherehpc serves the vspherehpc Terraform
// provider.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/provider"
)

// version is set by the release build: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers such as delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/vspherehpc/vspherehpc",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
