// A tiny Go program (standard library only) writing real Go profiles for tests/it/pprof_real.rs:
// usage: goprof DIR, writes into DIR
//
//   - heap.pb.gz: a heap profile (MemProfileRate 1) whose allocations go through grow, a
//     function inlined into allocInlined and called through a function value (not inlined)
//     from allocCalled, so go tool pprof -top marks it "(partial-inline)" and the inlined
//     growInner "(inline)";
//   - cpu.pb.gz: a CPU profile of spin (1e8 rounds of mix, some 100 ms of CPU), whose mix is inlined;
//   - goroutine.pb.gz: the goroutine profile (sample type goroutine/count) while 8
//     goroutines are parked in parked.
package main

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

var keep [][]byte

func growInner(n int) []byte { return make([]byte, n) }

func grow(n int) []byte { return growInner(n) }

var growFn = grow

//go:noinline
func allocInlined(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, grow(4096))
	}
}

//go:noinline
func allocCalled(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, growFn(65536))
	}
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

var sink uint64

//go:noinline
func spin(n uint64) {
	s := uint64(1)
	for i := uint64(0); i < n; i++ {
		s = mix(s + i)
	}
	sink = s
}

//go:noinline
func parked(c chan struct{}, ready chan struct{}) {
	ready <- struct{}{}
	<-c
}

func write(path string, f func(io.Writer) error) {
	out, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	if err := f(out); err != nil {
		panic(err)
	}
	if err := out.Close(); err != nil {
		panic(err)
	}
}

func main() {
	dir := os.Args[1]
	runtime.MemProfileRate = 1
	keep = make([][]byte, 0, 4096)
	allocInlined(500)
	allocCalled(50)
	runtime.GC()
	write(filepath.Join(dir, "heap.pb.gz"), pprof.WriteHeapProfile)

	write(filepath.Join(dir, "cpu.pb.gz"), func(f io.Writer) error {
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		spin(100_000_000)
		pprof.StopCPUProfile()
		return nil
	})

	c := make(chan struct{})
	ready := make(chan struct{})
	for i := 0; i < 8; i++ {
		go parked(c, ready)
	}
	for i := 0; i < 8; i++ {
		<-ready
	}
	write(filepath.Join(dir, "goroutine.pb.gz"), func(f io.Writer) error {
		return pprof.Lookup("goroutine").WriteTo(f, 0)
	})
	close(c)
	runtime.KeepAlive(keep)
}
