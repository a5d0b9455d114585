// Holds 4,000,000 small live objects (and a million dropped ones, free slots) for
// bench/go_heap.sh, prints READY and sleeps until killed.
package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"time"
)

var held [][]byte

func main() {
	debug.SetGCPercent(-1)
	held = make([][]byte, 0, 4000000)
	for i := 0; i < 5000000; i++ {
		b := make([]byte, 24+8*(i%8)) // size classes 24 to 80 bytes
		if i%5 != 4 {
			held = append(held, b)
		}
	}
	runtime.GC()
	os.Stdout.WriteString("READY\n")
	for {
		time.Sleep(time.Hour)
	}
}
