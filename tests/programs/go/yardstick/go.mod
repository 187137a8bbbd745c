module yardstick

go 1.19
