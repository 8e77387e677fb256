//! A run from pretrained weights (`taks train --init`, an experiment's `init`): the
//! settings that fine-tuning a ResNet on a folder changes, and what it leaves to the
//! person.

use std::path::Path;

use super::config::TrainConfig;
use super::paper::CLOTHING1M_EPOCHS;
use crate::Result;
use crate::formats::state_dict::StateDict;
use crate::nn::{Architecture, pretrained};

/// What a run started from pretrained weights leaves to the person.
pub struct Given {
    /// `--lr` or `--decay-start` was given: the usual linear decay, not the steps.
    pub schedule: bool,
    /// `--epochs` was given.
    pub epochs: bool,
}

impl TrainConfig {
    /// Set up to fine-tune the ResNet in the weights file `path`, read here: see
    /// [`TrainConfig::fine_tune`]. Returns the file's tensors.
    pub fn start_from(&mut self, path: &Path, given: Given) -> Result<StateDict> {
        let state = pretrained::read(path)?;
        self.fine_tune(path, &state, given)?;
        Ok(state)
    }

    /// Set up to fine-tune the ResNet whose tensors `state` the file `path` holds: the
    /// file's depth, its path recorded (so a resumed run prepares images the same way)
    /// and, unless `given` says otherwise, the paper's Clothing1M step schedule (its
    /// appendix: 15 epochs, a third each at 8e-4, 5e-4 and 5e-5). One line names the
    /// file when it is not a ResNet this config can take.
    pub fn fine_tune(&mut self, path: &Path, state: &StateDict, given: Given) -> Result<()> {
        self.architecture = match pretrained::depth_of(state) {
            Some(Ok(architecture)) => architecture,
            _ => Architecture::ResNet18,
        };
        self.init = Some(crate::absolute(path));
        pretrained::check_depth(state, self.architecture, path)?;
        if !given.schedule {
            if !given.epochs {
                self.epochs = CLOTHING1M_EPOCHS;
            }
            self.learning_rate = 8e-4;
            self.lr_steps = Some(self.clothing1m_steps());
        }
        self.validate()
    }
}
