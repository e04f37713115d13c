//go:build !linux

package qualify

import "errors"

func diskOf(string) (total, free uint64, err error) {
	return 0, 0, errors.New("disk size: not implemented on this system")
}
