#ifndef RK_LOG_H
#define RK_LOG_H
/* The engine's diagnostic log: lines appended to DATA_DIR/log/rakazo.log
 * (never the terminal). RAKAZO_LOG=debug adds debug lines. */
enum rk_log_level { RK_LOG_DEBUG, RK_LOG_INFO, RK_LOG_WARN, RK_LOG_ERROR };
void rk_log_open(const char *data_dir);
void rk_log(enum rk_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
