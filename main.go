// Command terraform-provider-vspherehpc serves the vspherehpc Terraform
// provider.
package main

import (
	"context"
	"flag"
	"log"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/provider"
)

// version is set by the release build: -ldflags "-X main.version=1.2.3".
var version = "dev"

// logoutTimeout bounds logging out of vCenter once Terraform is done with the
// plugin: go-plugin kills a plugin that has not exited 2 seconds after it was
// asked to.
const logoutTimeout = 1500 * time.Millisecond

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers such as delve")
	flag.Parse()

	factory, logout := provider.NewWithLogout(version)
	err := providerserver.Serve(context.Background(), factory, providerserver.ServeOpts{
		Address: "registry.terraform.io/vspherehpc/vspherehpc",
		Debug:   debug,
	})
	// Serve returns when Terraform closes the plugin (go-plugin's Shutdown) or,
	// with -debug, on an interrupt. End the sessions rather than leave them to
	// vCenter's idle timeout.
	ctx, cancel := context.WithTimeout(context.Background(), logoutTimeout)
	if lerr := logout(ctx); lerr != nil {
		log.Printf("logging out of vCenter: %v", lerr)
	}
	cancel()
	if err != nil {
		log.Fatal(err)
	}
}
