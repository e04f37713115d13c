// Package bench holds the parts of rekuiper's end-to-end benchmark
// command (cmd/kuiperbench): child processes (mosquitto, kuiperd) whose
// CPU and memory are read from /proc, a paced MQTT publisher, an
// independent subscriber that measures latency and loss, and the
// scenarios of issues 3, 4 and 5; for issue 8 an in-process kfake cluster
// with a Kafka producer and read_committed consumer.
package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
// It is 100 on every Linux architecture Go supports; reading it needs
// sysconf (cgo), so it is fixed here.
const clockTicks = 100

// CPUTime returns the user and system CPU time consumed so far by process
// pid and all its threads (utime+stime of /proc/PID/stat), at a resolution
// of 10 ms.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; fields resume after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse stat of %d: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("parse stat of %d: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse stat of %d: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// Memory is a process's resident memory from /proc/PID/status, in bytes.
type Memory struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: highest resident since the process started
}

// ReadMemory returns the resident memory of process pid.
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("read status of %d: %w", pid, err)
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &m.RSS
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &m.Peak
		default:
			continue
		}
		fs := strings.Fields(line)
		if len(fs) >= 2 {
			kb, err := strconv.ParseInt(fs[1], 10, 64)
			if err == nil {
				*dst = kb * 1024
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Memory{}, fmt.Errorf("read status of %d: %w", pid, err)
	}
	return m, nil
}

// SelfCPU returns the CPU time of the calling process.
func SelfCPU() (time.Duration, error) { return CPUTime(os.Getpid()) }

// Machine describes the host: CPU model, logical CPUs and total memory.
func Machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					model = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	cpus := 0
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		cpus = strings.Count(string(b), "\nprocessor") + boolInt(bytes.HasPrefix(b, []byte("processor")))
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				fs := strings.Fields(l)
				if len(fs) >= 2 {
					if kb, err := strconv.ParseInt(fs[1], 10, 64); err == nil {
						mem = fmt.Sprintf("%.1f GiB RAM", float64(kb)/(1<<20))
					}
				}
			}
		}
	}
	return fmt.Sprintf("%d × %s, %s", cpus, model, mem)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
