module heapconv.test/goprof

go 1.19
