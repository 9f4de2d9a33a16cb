module heapfixture

go 1.19
