// A tiny Go program whose heap profile tests/merge.rs reads: two functions allocate known
// amounts that stay live (1000 x 4 KiB in allocSmall, 100 x 64 KiB in allocLarge), then the
// heap profile is written with pprof.WriteHeapProfile. Usage: heapfixture OUT.pb.gz RATE,
// where RATE is runtime.MemProfileRate (1 records every allocation, so the values of the two
// functions are exact).
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
)

var keep [][]byte

//go:noinline
func allocSmall(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 4096))
	}
}

//go:noinline
func allocLarge(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 65536))
	}
}

func main() {
	rate, err := strconv.Atoi(os.Args[2])
	if err != nil {
		panic(err)
	}
	runtime.MemProfileRate = rate
	keep = make([][]byte, 0, 4096)
	allocSmall(1000)
	allocLarge(100)
	runtime.GC()
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
	runtime.KeepAlive(keep)
}
