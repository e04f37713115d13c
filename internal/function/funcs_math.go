package function

func registerMath(r *Registry) {}
