package server

import (
	"fmt"
	"time"
)

// sysInfo is what GET / reports about the process and the machine, in
// eKuiper's keys and units: cpuUsage is the process's CPU time over its
// wall time since the server started, as a percentage ("12.50%");
// memoryUsed is the resident set size in bytes; memoryTotal is the memory
// the process may use in bytes (the cgroup limit when there is one, else
// the machine's memory). A figure the platform cannot give is "" and left
// out of the answer, as eKuiper does.
type sysInfo struct {
	CPUUsage    string
	MemoryUsed  string
	MemoryTotal string
}

func readSysInfo(since time.Duration) sysInfo {
	var si sysInfo
	if cpu, ok := processCPU(); ok && since > 0 {
		si.CPUUsage = fmt.Sprintf("%.2f%%", 100*cpu.Seconds()/since.Seconds())
	}
	if rss, ok := processRSS(); ok {
		si.MemoryUsed = fmt.Sprint(rss)
	}
	if total, ok := memoryTotal(); ok {
		si.MemoryTotal = fmt.Sprint(total)
	}
	return si
}
