// Writes a big real Go heap profile for the merge benchmark (benches/merge-family.sh goheap):
// MemProfileRate 1 and N allocations, each through a different call path (20 frames deep)
// over 16 functions (the path spells the allocation's number in base 16), so the profile
// has about N distinct stacks, as a large Go service's heap profile does.
//
//	go run . OUT.pb.gz N [SEED]
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
)

const depth = 10

var keep [][]byte

type step func(path uint64, level int)

var steps [16]step

func next(path uint64, level int) {
	if level == depth {
		keep = append(keep, make([]byte, 16+int(path%61)*8))
		return
	}
	steps[path&15](path>>4, level+1)
}

//go:noinline
func f0(p uint64, l int) { next(p, l) }

//go:noinline
func f1(p uint64, l int) { next(p, l) }

//go:noinline
func f2(p uint64, l int) { next(p, l) }

//go:noinline
func f3(p uint64, l int) { next(p, l) }

//go:noinline
func f4(p uint64, l int) { next(p, l) }

//go:noinline
func f5(p uint64, l int) { next(p, l) }

//go:noinline
func f6(p uint64, l int) { next(p, l) }

//go:noinline
func f7(p uint64, l int) { next(p, l) }

//go:noinline
func f8(p uint64, l int) { next(p, l) }

//go:noinline
func f9(p uint64, l int) { next(p, l) }

//go:noinline
func f10(p uint64, l int) { next(p, l) }

//go:noinline
func f11(p uint64, l int) { next(p, l) }

//go:noinline
func f12(p uint64, l int) { next(p, l) }

//go:noinline
func f13(p uint64, l int) { next(p, l) }

//go:noinline
func f14(p uint64, l int) { next(p, l) }

//go:noinline
func f15(p uint64, l int) { next(p, l) }

func main() {
	runtime.MemProfileRate = 1
	steps = [16]step{f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15}
	n, _ := strconv.ParseUint(os.Args[2], 10, 64)
	seed := uint64(0)
	if len(os.Args) > 3 {
		seed, _ = strconv.ParseUint(os.Args[3], 10, 64)
	}
	for i := uint64(0); i < n; i++ {
		// A multiplicative permutation of the paths, by seed.
		next((i*0x9E3779B1+seed*7919)&0xffffff, 0)
		if i%4 == 0 {
			keep[len(keep)-1] = nil // freed: alloc and inuse values differ
		}
	}
	runtime.GC()
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		panic(err)
	}
	f.Close()
}
