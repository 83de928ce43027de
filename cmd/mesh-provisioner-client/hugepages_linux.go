package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const hugePage = 2 << 20

// collapseHeap collapses each dense 2 MiB stretch of the process's private
// anonymous writable memory (the Go heap and the runtime's own) into a
// huge page. The error is the first the kernel gave (EINVAL, as
// errCollapseRefused, before Linux 6.1 or with huge pages turned off for
// the process; EAGAIN or ENOMEM when it had no huge page to give).
func collapseHeap() (collapsed, error) {
	start := time.Now()
	var c collapsed
	var first error
	small := os.Getpagesize()
	vec := make([]byte, hugePage/small)
	for _, r := range anonStretches() {
		for at := r[0]; at < r[1]; at += hugePage {
			if !dense(at, vec) {
				c.sparse++
				continue
			}
			if _, _, e := unix.Syscall(unix.SYS_MADVISE, at, hugePage, unix.MADV_COLLAPSE); e != 0 {
				if first == nil {
					first = fmt.Errorf("madvise MADV_COLLAPSE: %w", e)
					if e == unix.EINVAL {
						// A dense stretch of a private anonymous mapping is
						// what it collapses: EINVAL is no collapse at all.
						first = fmt.Errorf("%w: madvise: %w", errCollapseRefused, e)
					}
				}
				continue
			}
			c.dense++
		}
	}
	c.huge = anonHuge()
	c.took = time.Since(start)
	return c, first
}

// dense says whether at least 1/denseEnough of the small pages of the 2 MiB
// stretch at at are resident (mincore, into vec: one byte a small page).
func dense(at uintptr, vec []byte) bool {
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, at, hugePage, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return false // unmapped since the maps were read
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n*denseEnough >= len(vec)
}

// anonStretches lists the process's private anonymous writable mappings
// (/proc/self/maps: no file, rw-p) trimmed to whole, aligned 2 MiB
// stretches, as [start, end) pairs.
func anonStretches() [][2]uintptr {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 || fs[1] != "rw-p" {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		l = (l + hugePage - 1) &^ (hugePage - 1)
		h &^= hugePage - 1
		if h > l {
			out = append(out, [2]uintptr{uintptr(l), uintptr(h)})
		}
	}
	return out
}

// anonHuge is the process's anonymous memory in huge pages, in bytes.
func anonHuge() int64 {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte("AnonHugePages:")); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(string(v)), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
