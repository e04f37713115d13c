//go:build race

package apisurface

func init() { buildFlags = []string{"-race"} }
