// Command kuiperd is the rekuiper daemon: the REST API over a durable
// catalog, running the rules it holds. A daemon with extensions is the same
// main with their Register functions (see packages sdk and sdk/kuiperd, and
// `kuiper build`).
package main

import "github.com/rekuiper/rekuiper/sdk/kuiperd"

func main() { kuiperd.Main() }
