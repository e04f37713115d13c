// Command printversion prints version.Get(), for the linker stamp test.
package main

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/version"
)

func main() { fmt.Println(version.Get()) }
