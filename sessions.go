package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"os"
	"os/exec"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// The provider ends its vCenter sessions when Terraform stops it, rather
// than leave them to vCenter's idle timeout: sessions that pile up lock
// vCenter out (the vSphere provider never logs out, its issues #618 and
// #2331). Terraform waits for a plugin to exit before it goes on
// (go-plugin's Kill), so a logout there would cost every command that used
// vCenter one more round trip. The plugin hands its sessions to a process
// of the same binary (-end-sessions) and exits; that process logs them out
// while Terraform goes on.

// endSessionsFlag runs the binary as the process that ends the sessions
// another handed over, as JSON on standard input.
const endSessionsFlag = "end-sessions"

// stopTimeout bounds what the plugin does once Terraform is done with it:
// go-plugin kills a plugin that has not exited 2 seconds after it was asked
// to.
const stopTimeout = 1500 * time.Millisecond

// enderTimeout bounds the session ender's logouts, so that an unreachable
// vCenter does not keep it running: its sessions then end at vCenter's idle
// timeout.
const enderTimeout = 30 * time.Second

// endSessionsOnExit hands the sessions over to a session ender, and
// returns its process id; or logs them out itself, and returns 0, under a
// debugger (-debug: Serve returned on an interrupt, and nobody waits) or
// when the ender cannot start.
func endSessionsOnExit(sessions *vsphere.Clients, debug bool) (ender int) {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if debug {
		logError("logging out of vCenter", sessions.LogoutAll(ctx))
		return 0
	}
	ends, err := sessions.HandOff(ctx)
	logError("handing the vCenter sessions over", err)
	if len(ends) == 0 {
		return 0
	}
	exe, err := os.Executable()
	if err == nil {
		ender, err = startSessionEnder(exe, ends)
	}
	if err != nil {
		logError("starting the process that logs out of vCenter; logging out now", err)
		logError("logging out of vCenter", vsphere.EndSessions(ctx, ends))
	}
	return ender
}

// startSessionEnder starts exe as a session ender for ends, in a session
// of its own (no terminal's interrupt reaches it), and returns its process
// id once they are written to it, without waiting for it.
func startSessionEnder(exe string, ends []vsphere.SessionEnd) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe, "-"+endSessionsFlag)
	cmd.Stdin = r // standard output and error: the null device
	cmd.SysProcAttr = detached()
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return 0, err
	}
	pid := cmd.Process.Pid
	if err := errors.Join(json.NewEncoder(w).Encode(ends), w.Close()); err != nil {
		// It has not read them all: it logs out none, and the caller does.
		_ = cmd.Process.Kill()
		return 0, err
	}
	return pid, cmd.Process.Release()
}

// runSessionEnder logs out the sessions read from in: the exit status of
// a session ender.
func runSessionEnder(in io.Reader) int {
	var ends []vsphere.SessionEnd
	if err := json.NewDecoder(in).Decode(&ends); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), enderTimeout)
	defer cancel()
	if vsphere.EndSessions(ctx, ends) != nil {
		return 1
	}
	return 0
}

func logError(what string, err error) {
	if err != nil {
		log.Printf("%s: %v", what, err)
	}
}
