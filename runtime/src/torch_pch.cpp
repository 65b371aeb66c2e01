// The translation unit that compiles the shared LibTorch precompiled header
// (cmake/WavepoolTorch.cmake); it defines nothing.
