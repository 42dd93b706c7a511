//! Native logging through log4rs to the executor's stderr (where Spark's own logs go), set up once per JVM:
//! a level (`spark.ember.native.logLevel`) or a log4rs YAML file (`spark.ember.native.logConfigFile`).
use std::sync::Once;

use log::LevelFilter;
use log4rs::append::console::{ConsoleAppender, Target};
use log4rs::config::{Appender, Config, Root};
use log4rs::encode::pattern::PatternEncoder;

static INIT: Once = Once::new();

pub fn init(level: &str, config_file: &str) -> Result<(), String> {
    let mut result = Ok(());
    INIT.call_once(|| {
        result = if !config_file.is_empty() {
            log4rs::init_file(config_file, Default::default())
                .map_err(|e| format!("cannot read log4rs config {config_file}: {e}"))
        } else {
            let level = level.parse::<LevelFilter>().unwrap_or(LevelFilter::Warn);
            let stderr = ConsoleAppender::builder()
                .target(Target::Stderr)
                .encoder(Box::new(PatternEncoder::new("{d(%y/%m/%d %H:%M:%S)} {l} ember-native: {m}{n}")))
                .build();
            Config::builder()
                .appender(Appender::builder().build("stderr", Box::new(stderr)))
                .build(Root::builder().appender("stderr").build(level))
                .map_err(|e| e.to_string())
                .and_then(|c| log4rs::init_config(c).map(|_| ()).map_err(|e| e.to_string()))
        };
    });
    result
}
