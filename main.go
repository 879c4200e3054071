// Command terraform-provider-vspherehpc serves the vspherehpc Terraform
// provider.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"runtime/debug"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/provider"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/sessionender"
)

// version is set by the release build: -ldflags "-X main.version=1.2.3".
var version = "dev"

// gcPercent is the provider's GOGC when the environment sets none. A plugin
// lives for one of Terraform's walks, and almost all it allocates is
// garbage at once: vCenter's answers decoded, Terraform's messages. At
// Go's default of 100 the collector took a fifth of the provider's CPU in
// a refresh of 256 VMs; at 400 that refresh took 0.75 s instead of 0.80
// and the plugin's peak memory was 110 MB instead of 73.
const gcPercent = 400

func main() {
	var debug, endSessions bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers such as delve")
	flag.BoolVar(&endSessions, sessionender.Flag, false,
		"log out the vCenter sessions a provider process hands over on standard input, as it does when it stops")
	flag.Parse()
	if endSessions {
		os.Exit(sessionender.Run(os.Stdin, os.Stdout, sessionender.Log(os.Getenv, os.Args[0])))
	}
	if !logsAsked(os.Environ()) {
		// Terraform drops a provider's logs unless a TF_LOG variable asks for
		// them, yet terraform-plugin-log takes a logger's unset level as every
		// level, and each logger reads its own variable, not TF_LOG: the
		// framework would write a trace line for each step of each call, to
		// be encoded, piped to Terraform and thrown away: 15% of the
		// provider's CPU in a refresh.
		for _, env := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PROVIDER"} {
			_ = os.Setenv(env, "off")
		}
	}

	setGCPercent(os.Environ())

	factory, sessions := provider.NewWithSessions(version)
	err := providerserver.Serve(context.Background(), factory, providerserver.ServeOpts{
		Address: "registry.terraform.io/vspherehpc/vspherehpc",
		Debug:   debug,
	})
	// Serve returns when Terraform closes the plugin (go-plugin's Shutdown) or,
	// with -debug, on an interrupt.
	sessionender.OnExit(sessions, debug)
	if err != nil {
		log.Fatal(err)
	}
}

// setGCPercent sets gcPercent unless environ sets GOGC, which the Go runtime
// has taken already.
func setGCPercent(environ []string) {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOGC=") {
			return
		}
	}
	debug.SetGCPercent(gcPercent)
}

// logsAsked reports whether the environment sets any of Terraform's or
// terraform-plugin-log's TF_LOG variables (TF_LOG, TF_LOG_PROVIDER,
// TF_LOG_SDK_FRAMEWORK, TF_LOG_PATH, ...).
func logsAsked(environ []string) bool {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "TF_LOG") {
			return true
		}
	}
	return false
}
