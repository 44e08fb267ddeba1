package main

func runDemo(args []string) int    { return 1 }
func runPredict(args []string) int { return 1 }
