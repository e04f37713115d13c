module github.com/rekuiper/rekuiper

go 1.26.8
