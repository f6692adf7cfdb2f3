module vvm.local/tooling/powercut

go 1.26

require (
	github.com/hanwen/go-fuse/v2 v2.12.1
	golang.org/x/sys v0.28.0
)
