// Package sessionender ends the provider's vCenter sessions when Terraform
// stops it, rather than leave them to vCenter's idle timeout: sessions that
// pile up lock vCenter out (the vSphere provider never logs out, its issues
// #618 and #2331). Terraform waits for a plugin to exit before it goes on
// (go-plugin's Kill), so a logout there would cost every command that used
// vCenter one more round trip. The plugin hands its sessions to a process
// of the same binary (-end-sessions) and exits once that process has read
// them; it logs them out while Terraform goes on.
package sessionender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// Flag runs the binary as the process that ends the sessions
// another handed over, as JSON on standard input.
const Flag = "end-sessions"

// stopTimeout bounds what the plugin does once Terraform is done with it:
// go-plugin kills a plugin that has not exited 2 seconds after it was asked
// to. Handing the sessions over takes handOffTimeout of it at most, and a
// logout when that fails the rest.
const (
	stopTimeout    = 1900 * time.Millisecond
	handOffTimeout = 1500 * time.Millisecond
)

// enderTimeout bounds the session ender's logouts, so that an unreachable
// vCenter does not keep it running: its sessions then end at vCenter's idle
// timeout.
const enderTimeout = 30 * time.Second

// OnExit hands the sessions over to a session ender, and
// returns its process id; or logs them out itself, and returns 0: under a
// debugger (-debug: Serve returned on an interrupt, and nobody waits), when
// Terraform is the first process of its PID namespace (a container's entry
// point: when it exits, every process left in the container is killed, the
// ender too), or when the ender cannot start.
func OnExit(sessions *vsphere.Clients, debug bool) (ender int) {
	stop, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if debug || os.Getppid() == 1 {
		logError("logging out of vCenter", sessions.LogoutAll(stop))
		return 0
	}
	ctx, cancelHandOff := context.WithTimeout(stop, handOffTimeout)
	defer cancelHandOff()
	ends, err := sessions.HandOff(ctx)
	logError("handing the vCenter sessions over", err)
	if len(ends) == 0 {
		return 0
	}
	exe, err := enderExecutable()
	if err == nil {
		ender, err = startSessionEnder(ctx, exe, ends)
	}
	if err != nil {
		logError("starting the process that logs out of vCenter; logging out now", err)
		logError("logging out of vCenter", vsphere.EndSessions(stop, ends))
		return 0
	}
	log.Printf("handed %d vCenter session(s) to process %d, which logs them out", len(ends), ender)
	return ender
}

// enderExecutable is the running binary: on Linux /proc/self/exe, which is
// it even when its file has been replaced or removed since it started.
func enderExecutable() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// startSessionEnder starts exe as a session ender for ends, in a session
// of its own (no terminal's interrupt reaches it), and returns its process
// id once it has said it read them all (a binary that does not know
// -end-sessions never says so), without waiting for the logouts. ctx
// bounds the wait; the ender is killed when it ends first.
func startSessionEnder(ctx context.Context, exe string, ends []vsphere.SessionEnd) (int, error) {
	stdin, toEnder, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	fromEnder, stdout, err := os.Pipe()
	if err != nil {
		stdin.Close()
		toEnder.Close()
		return 0, err
	}
	cmd := exec.Command(exe, "-"+Flag)
	if name, err := os.Executable(); err == nil {
		cmd.Args[0] = name // what ps shows, rather than /proc/self/exe
	}
	cmd.Stdin, cmd.Stdout = stdin, stdout // standard error: the null device
	cmd.Env = enderEnv(os.Environ())
	cmd.SysProcAttr = detached()
	err = cmd.Start()
	stdin.Close()
	stdout.Close()
	if err != nil {
		toEnder.Close()
		fromEnder.Close()
		return 0, err
	}
	taken := make(chan error, 1)
	go func() {
		err := errors.Join(json.NewEncoder(toEnder).Encode(ends), toEnder.Close())
		if err == nil {
			var ack [1]byte
			if _, rerr := io.ReadFull(fromEnder, ack[:]); rerr != nil {
				err = fmt.Errorf("the session ender did not take the sessions: %w", rerr)
			}
		}
		taken <- err
	}()
	select {
	case err = <-taken:
	case <-ctx.Done():
		err = fmt.Errorf("the session ender did not take the sessions: %w", ctx.Err())
	}
	toEnder.Close()
	fromEnder.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		return 0, err
	}
	pid := cmd.Process.Pid // Release sets it to -1
	return pid, cmd.Process.Release()
}

// enderEnv is what a session ender keeps of the plugin's environment: what
// reaching vCenter takes (proxies, the system's CA locations, Windows' own
// variables) and Terraform's log settings (see Log), not the
// credentials the plugin was given.
func enderEnv(environ []string) []string {
	var keep []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
			"SYSTEMROOT", "WINDIR", "TMP", "TEMP", "TMPDIR",
			"TF_LOG", "TF_LOG_CORE", "TF_LOG_PROVIDER", "TF_LOG_PATH":
			keep = append(keep, kv)
		}
	}
	return keep
}

// Run logs out the sessions read from in, once it has said on
// ack that it read them, and closed ack (the plugin stops reading it: a
// write after would fail, not kill the ender with SIGPIPE): the exit
// status of a session ender.
func Run(in io.Reader, ack io.WriteCloser, report hclog.Logger) int {
	var ends []vsphere.SessionEnd
	if err := json.NewDecoder(in).Decode(&ends); err != nil {
		return 2
	}
	if _, err := ack.Write([]byte{'\n'}); err != nil {
		return 2
	}
	_ = ack.Close()
	ctx, cancel := context.WithTimeout(context.Background(), enderTimeout)
	defer cancel()
	err := vsphere.EndSessions(ctx, ends)
	if err == nil {
		report.Debug("logged out of the vCenter sessions the plugin handed over", "sessions", len(ends))
		return 0
	}
	for _, err := range unjoin(err) {
		report.Warn("the session ends at vCenter's idle timeout", "error", err)
	}
	return 1
}

// unjoin is the errors errors.Join joined, or err alone.
func unjoin(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	return []error{err}
}

// Log is where a session ender reports: once the plugin has exited,
// its standard error reaches nobody, so it writes to Terraform's log file
// (TF_LOG_PATH, opened for appending as Terraform opens it, so its lines
// and Terraform's interleave whole), at the level Terraform logs providers
// at (TF_LOG_PROVIDER, else TF_LOG), as text or JSON as Terraform writes
// (TF_LOG=JSON), under the name Terraform gives the plugin's lines.
// Without a log file it reports nothing. Terraform's internal/logging
// (v1.14) is the model.
func Log(getenv func(string) string, binary string) hclog.Logger {
	path := getenv("TF_LOG_PATH")
	level := strings.ToUpper(getenv("TF_LOG_PROVIDER"))
	if level == "" {
		level = strings.ToUpper(getenv("TF_LOG"))
	}
	core := strings.ToUpper(getenv("TF_LOG"))
	if core == "" {
		core = strings.ToUpper(getenv("TF_LOG_CORE"))
	}
	if path == "" || level == "" || level == "OFF" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "provider." + filepath.Base(binary),
		Level:      enderLevel(level),
		Output:     &appendFile{path: path},
		JSONFormat: core == "JSON",
	})
}

// enderLevel is Terraform's reading of a TF_LOG level: JSON, or a name it
// does not know, is TRACE.
func enderLevel(name string) hclog.Level {
	switch name {
	case "DEBUG", "INFO", "WARN", "ERROR":
		return hclog.LevelFromString(name)
	}
	return hclog.Trace
}

// appendFile opens its file for each line, so that a session ender with
// nothing to say creates no file.
type appendFile struct{ path string }

func (a *appendFile) Write(line []byte) (int, error) {
	f, err := os.OpenFile(a.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return 0, err
	}
	n, err := f.Write(line)
	return n, errors.Join(err, f.Close())
}

func logError(what string, err error) {
	if err != nil {
		log.Printf("%s: %v", what, err)
	}
}
