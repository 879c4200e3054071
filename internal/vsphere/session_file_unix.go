//go:build !windows

package vsphere

import (
	"io/fs"
	"os"
	"syscall"
)

const ownerOnlyCheckable = true

// ownedByMe reports whether the provider's effective user owns fi.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// ownedByRoot reports whether root owns fi.
func ownedByRoot(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}

// openNoFollow opens name for reading, failing on a symbolic link, and
// without waiting on a named pipe (the caller refuses anything but a
// regular file once open).
func openNoFollow(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
