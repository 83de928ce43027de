//go:build !linux

package main

import "fmt"

// collapseHeap: huge pages are asked of Linux alone.
func collapseHeap() (collapsed, error) {
	return collapsed{}, fmt.Errorf("%w: huge pages for the heap are asked of Linux alone", errCollapseRefused)
}
