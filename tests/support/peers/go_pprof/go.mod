module protobench.test/pprofdemo

go 1.19
