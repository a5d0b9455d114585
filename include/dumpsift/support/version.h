#pragma once
namespace dumpsift {
inline constexpr const char *kToolName = "dumpsift";
inline constexpr const char *kToolVersion = "0.1.0";
} // namespace dumpsift
