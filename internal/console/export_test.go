package console

import "io/fs"

// Assets exposes the embedded files to the external tests.
func Assets() fs.FS { return assets }
